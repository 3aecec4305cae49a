// ONNX Runtime's side of tools/modelbench: runs MODEL on the inputs loom's
// loomtime wrote into DIR (meta.json, NAME.bin), checks the outputs against
// loom's (out_NAME.bin), times session.run the way loomtime times
// Module.Run (3 warm-up calls, then at least CALLS calls and SECONDS
// seconds), and prints one JSON line: the median per-call time with its
// spread (10th and 90th percentiles), and the largest difference from
// loom's outputs.
//
//   node ort_time.js MODEL DIR THREADS [SECONDS [CALLS [LABEL]]]
//
// Needs onnxruntime-node (tools/modelbench/run installs it into
// bin/modelbench; NODE_PATH points there).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function fail(msg) {
	process.stderr.write('ort_time.js: ' + msg + '\n');
	process.exit(1);
}

function readTyped(file, dtype) {
	const b = fs.readFileSync(file);
	const ab = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
	switch (dtype) {
	case 'float32': return new Float32Array(ab);
	case 'int64': return new BigInt64Array(ab);
	case 'int32': return new Int32Array(ab);
	}
	fail(`${file}: dtype ${dtype} is not supported`);
}

function readF32(file) {
	const b = fs.readFileSync(file);
	return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

async function main() {
	const [model, dir, threadsArg, secondsArg, callsArg, label] = process.argv.slice(2);
	if (!model || !dir || !threadsArg) fail('usage: node ort_time.js MODEL DIR THREADS [SECONDS [CALLS [LABEL]]]');
	const threads = parseInt(threadsArg, 10);
	const seconds = secondsArg ? parseFloat(secondsArg) : 2;
	const minCalls = callsArg ? parseInt(callsArg, 10) : 50;
	if (!(threads >= 1) || !(seconds > 0) || !(minCalls >= 1)) fail(`THREADS ${threadsArg}, SECONDS ${secondsArg}, CALLS ${callsArg}: want positive numbers`);
	const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json')));
	const session = await ort.InferenceSession.create(model, {
		intraOpNumThreads: threads,
		interOpNumThreads: 1,
		executionMode: 'sequential',
		graphOptimizationLevel: 'all',
		// ORT_PROFILE=PREFIX writes ONNX Runtime's own profile of the
		// timed calls (each node's time) to PREFIX_<date>.json, to set
		// beside loomtime -profile.
		...(process.env.ORT_PROFILE ? { enableProfiling: true, profileFilePrefix: process.env.ORT_PROFILE } : {}),
	});
	const feeds = {};
	for (const t of meta.inputs) feeds[t.name] = new ort.Tensor(t.dtype || 'float32', readTyped(path.join(dir, t.file), t.dtype || 'float32'), t.shape);
	let out;
	for (let i = 0; i < 3; i++) out = await session.run(feeds);
	// The largest difference from loom's outputs, relative to the largest
	// magnitude of loom's output.
	let maxErr = 0;
	for (const t of meta.outputs) {
		const want = readF32(path.join(dir, t.file));
		const got = out[t.name];
		if (!got) fail(`output ${t.name}: ONNX Runtime did not produce it`);
		if (got.data.length !== want.length) fail(`output ${t.name}: ${got.data.length} elements, loom ${want.length}`);
		let scale = 0;
		for (const v of want) scale = Math.max(scale, Math.abs(v));
		for (let i = 0; i < want.length; i++) {
			const d = Math.abs(got.data[i] - want[i]) / Math.max(scale, 1e-30);
			if (!(d <= maxErr)) maxErr = Number.isNaN(d) ? Infinity : Math.max(maxErr, d);
		}
	}
	const times = [];
	const cpu0 = process.cpuUsage();
	const start = process.hrtime.bigint();
	while (times.length < minCalls || Number(process.hrtime.bigint() - start) / 1e9 < seconds) {
		const t = process.hrtime.bigint();
		await session.run(feeds);
		times.push(Number(process.hrtime.bigint() - t) / 1e6);
		if (times.length >= 100000) break;
	}
	const cpu = process.cpuUsage(cpu0);
	times.sort((a, b) => a - b);
	const pct = (p) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
	const line = {
		engine: 'onnxruntime', label: label || undefined, graph: meta.graph || path.basename(dir), threads,
		calls: times.length, median_ms: pct(0.5), p10_ms: pct(0.1), p90_ms: pct(0.9), min_ms: times[0],
		cpu_ms_per_call: (cpu.user + cpu.system) / 1000 / times.length, max_rel_err: maxErr, version: ort.env.versions.common,
	};
	process.stdout.write(JSON.stringify(line) + '\n');
	if (process.env.ORT_PROFILE) session.endProfiling();
}

main().catch((e) => fail(String(e && e.stack ? e.stack : e)));
