// testdata/onnx/reference.js: runs every case make.py wrote with ONNX
// Runtime (onnxruntime-node) on its inputs and writes the outputs beside
// them (test_data_set_0/output_K.pb), the reference package onnx's tests
// compare loom's import with.
//
//   NODE_PATH=bin/modelbench/node_modules node testdata/onnx/reference.js
//
// Inputs and outputs are ONNX TensorProto messages holding raw_data, as
// numpy_helper.from_array writes them; the few fields they use are coded
// here (dims = 1, data_type = 2, name = 8, raw_data = 9).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const types = {1: 'float32', 6: 'int32', 7: 'int64', 9: 'bool', 11: 'float64'};
const codes = Object.fromEntries(Object.entries(types).map(([k, v]) => [v, Number(k)]));
const arrays = {float32: Float32Array, int32: Int32Array, int64: BigInt64Array, float64: Float64Array, bool: Uint8Array};

function varint(buf, pos) {
	let v = 0n, shift = 0n;
	for (;;) {
		const b = buf[pos++];
		v |= BigInt(b & 0x7f) << shift;
		if (!(b & 0x80)) return [v, pos];
		shift += 7n;
	}
}

function decode(buf) {
	const t = {dims: [], type: 0, name: '', raw: Buffer.alloc(0)};
	let pos = 0;
	while (pos < buf.length) {
		let key;
		[key, pos] = varint(buf, pos);
		const field = Number(key >> 3n), wire = Number(key & 7n);
		if (wire === 0) {
			let v;
			[v, pos] = varint(buf, pos);
			if (field === 1) t.dims.push(Number(v));
			if (field === 2) t.type = Number(v);
		} else if (wire === 2) {
			let len;
			[len, pos] = varint(buf, pos);
			const body = buf.subarray(pos, pos + Number(len));
			pos += Number(len);
			if (field === 1) for (let p = 0; p < body.length;) { let v; [v, p] = varint(body, p); t.dims.push(Number(v)); }
			if (field === 8) t.name = body.toString();
			if (field === 9) t.raw = Buffer.from(body);
		} else throw new Error('unexpected wire type ' + wire);
	}
	return t;
}

function putVarint(out, v) {
	v = BigInt(v);
	do {
		let b = Number(v & 0x7fn);
		v >>= 7n;
		if (v) b |= 0x80;
		out.push(b);
	} while (v);
}

function encode(name, tensor) {
	const out = [];
	for (const d of tensor.dims) { putVarint(out, (1 << 3) | 0); putVarint(out, d); }
	putVarint(out, (2 << 3) | 0); putVarint(out, codes[tensor.type]);
	const nameBytes = Buffer.from(name);
	putVarint(out, (8 << 3) | 2); putVarint(out, nameBytes.length); out.push(...nameBytes);
	const data = tensor.type === 'bool' ? Uint8Array.from(tensor.data, x => (x ? 1 : 0)) : tensor.data;
	const raw = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
	putVarint(out, (9 << 3) | 2); putVarint(out, raw.length);
	return Buffer.concat([Buffer.from(out), raw]);
}

async function main() {
	const here = __dirname;
	const cases = fs.readdirSync(here).filter(d => fs.existsSync(path.join(here, d, 'model.onnx'))).sort();
	for (const c of cases) {
		const dir = path.join(here, c, 'test_data_set_0');
		const session = await ort.InferenceSession.create(path.join(here, c, 'model.onnx'), {intraOpNumThreads: 1, graphOptimizationLevel: 'disabled'});
		const feeds = {};
		for (const f of fs.readdirSync(dir).filter(f => f.startsWith('input_')).sort()) {
			const t = decode(fs.readFileSync(path.join(dir, f)));
			const type = types[t.type];
			const raw = t.raw.buffer.slice(t.raw.byteOffset, t.raw.byteOffset + t.raw.byteLength);
			const data = type === 'bool' ? Uint8Array.from(new Uint8Array(raw), x => x !== 0) : new arrays[type](raw);
			feeds[t.name] = new ort.Tensor(type, data, t.dims);
		}
		const outs = await session.run(feeds);
		session.outputNames.forEach((name, k) => {
			fs.writeFileSync(path.join(dir, `output_${k}.pb`), encode(name, outs[name]));
		});
	}
	console.log(`reference outputs for ${cases.length} cases`);
}

main().catch(e => { console.error(e); process.exit(1); });
