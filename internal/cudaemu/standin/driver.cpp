// driver.cpp: a stand-in for the CUDA driver (libcuda) and NVRTC
// (libnvrtc) in one library, so that loom's launcher (codegen/cuda,
// runtime.go) runs for real on a machine without a GPU: the same entry
// points, loaded the same way (dlopen), called with the same arguments.
//
// "Compiling" a program builds its CUDA C source with g++ against
// loom_emu.h into a shared object, with one extern "C" launcher per
// __global__ function; the "PTX" names that object, which the module
// loader opens. Device memory is host memory, copies are memcpy, a launch
// runs the kernel's blocks on the CPU (loom_emu.h: every thread of a block
// a fiber, the block's fibers run by the calling thread), and events read
// the host's clock.
//
// LOOM_EMU_DIR (a macro, set when this file is built) is the directory
// holding loom_emu.h (and its precompiled form, built with the same
// flags); modules are built in directories under it, with g++'s flags
// LOOM_EMU_FLAGS (a macro too).

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifndef LOOM_EMU_DIR
#error "build with -DLOOM_EMU_DIR=\"...\": the directory of loom_emu.h"
#endif
#ifndef LOOM_EMU_FLAGS
#error "build with -DLOOM_EMU_FLAGS=\"...\": g++'s flags for a module"
#endif

namespace {

// CUresult values, as cuda.h numbers them.
enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kInvalidDevice = 101,
  kInvalidImage = 200,
  kInvalidHandle = 400,
  kNotFound = 500,
  kLaunchOutOfResources = 701,
};

// nvrtcResult values, as nvrtc.h numbers them.
enum : int {
  kNvrtcSuccess = 0,
  kNvrtcInvalidInput = 3,
  kNvrtcInvalidProgram = 4,
  kNvrtcInvalidOption = 5,
  kNvrtcCompilation = 6,
};

const char* kImageTag = ".loom_standin_object ";

struct Kernel {
  std::string name;
  std::vector<std::string> types;  // of the parameters, in order
};

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace((unsigned char)s[b])) b++;
  while (e > b && std::isspace((unsigned char)s[e - 1])) e--;
  return s.substr(b, e - b);
}

bool identChar(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

// kernels finds the __global__ functions of src and their parameter
// types. It returns false, with a message in err, on a declaration it
// cannot read.
bool kernels(const std::string& src, std::vector<Kernel>* out, std::string* err) {
  const std::string key = "__global__";
  for (size_t at = src.find(key); at != std::string::npos; at = src.find(key, at + key.size())) {
    size_t i = at + key.size();
    auto skipSpace = [&] {
      while (i < src.size() && std::isspace((unsigned char)src[i])) i++;
    };
    auto ident = [&] {
      size_t b = i;
      while (i < src.size() && identChar(src[i])) i++;
      return src.substr(b, i - b);
    };
    // group reads a parenthesized group at i and returns what is inside.
    auto group = [&](std::string* inside) {
      if (i >= src.size() || src[i] != '(') return false;
      size_t b = i + 1;
      for (int depth = 0; i < src.size(); i++) {
        if (src[i] == '(') depth++;
        if (src[i] == ')' && --depth == 0) {
          *inside = src.substr(b, i - b);
          i++;
          return true;
        }
      }
      return false;
    };
    skipSpace();
    if (ident() != "void") continue;  // a mention, not a declaration
    skipSpace();
    std::string name = ident(), params;
    if (name == "__launch_bounds__") {
      skipSpace();
      if (!group(&params)) {
        *err = "unreadable __launch_bounds__ after __global__";
        return false;
      }
      skipSpace();
      name = ident();
    }
    skipSpace();
    if (name.empty() || !group(&params)) {
      *err = "unreadable __global__ declaration " + name;
      return false;
    }
    Kernel k{name, {}};
    std::string p;
    std::stringstream list(params);
    while (std::getline(list, p, ',')) {
      p = trim(p);
      if (p.empty() || p == "void") continue;
      size_t e = p.size();
      while (e > 0 && identChar(p[e - 1])) e--;
      std::string type = trim(p.substr(0, e));
      if (type.empty()) {
        *err = "kernel " + name + ": parameter " + p + " has no type";
        return false;
      }
      k.types.push_back(type);
    }
    out->push_back(k);
  }
  return true;
}

// launchers returns the extern "C" launcher of each kernel: it takes the
// grid and block sizes and the parameters as cuLaunchKernel passes them
// (an array of pointers to the values), and returns 0, or 1 where the
// threads of a block could not be started or deadlocked (no exception may
// cross into the host process).
std::string launchers(const std::vector<Kernel>& ks) {
  std::ostringstream o;
  for (const Kernel& k : ks) {
    o << "\nextern \"C\" int loom_standin_" << k.name << "(const unsigned* d, void** p) try {\n"
      << "  loom_launch({d[0], d[1], d[2]}, {d[3], d[4], d[5]}, [&] { " << k.name << "(";
    for (size_t i = 0; i < k.types.size(); i++) {
      o << (i ? ", " : "") << "*(" << k.types[i] << "*)p[" << i << "]";
    }
    o << "); });\n  return 0;\n} catch (...) {\n  return 1;\n}\n";
  }
  return o.str();
}

bool readFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream b;
  b << f.rdbuf();
  *out = b.str();
  return true;
}

struct Program {
  std::string src, log, image;
};

struct Event {
  std::chrono::steady_clock::time_point at;
};

using Launcher = int (*)(const unsigned*, void**);

}  // namespace

extern "C" {

// ---- the driver ----

int cuInit(unsigned) { return kSuccess; }

int cuDeviceGet(int* dev, int ordinal) {
  if (ordinal != 0) return kInvalidDevice;
  *dev = 0;
  return kSuccess;
}

int cuDeviceGetAttribute(int* v, int attr, int dev) {
  if (dev != 0) return kInvalidDevice;
  switch (attr) {
    case 75:  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
      *v = 8;
      return kSuccess;
    case 76:  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
      *v = 0;
      return kSuccess;
  }
  return kInvalidValue;
}

int cuDevicePrimaryCtxRetain(void** ctx, int dev) {
  static int context;
  if (dev != 0) return kInvalidDevice;
  *ctx = &context;
  return kSuccess;
}

int cuCtxSetCurrent(void* ctx) { return ctx ? kSuccess : kInvalidValue; }

int cuCtxSynchronize() { return kSuccess; }

int cuModuleLoadData(void** mod, const void* image) {
  const char* at = std::strstr((const char*)image, kImageTag);
  if (!at) return kInvalidImage;
  std::string path(at + std::strlen(kImageTag));
  path = path.substr(0, path.find('\n'));
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return kInvalidImage;
  *mod = h;
  return kSuccess;
}

int cuModuleGetFunction(void** fn, void* mod, const char* name) {
  if (!mod) return kInvalidHandle;
  void* f = dlsym(mod, ("loom_standin_" + std::string(name)).c_str());
  if (!f) return kNotFound;
  *fn = f;
  return kSuccess;
}

int cuModuleUnload(void* mod) { return mod && dlclose(mod) == 0 ? kSuccess : kInvalidHandle; }

int cuMemAlloc_v2(unsigned long long* ptr, size_t bytes) {
  if (bytes == 0) return kInvalidValue;
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) return kOutOfMemory;
  *ptr = (unsigned long long)p;
  return kSuccess;
}

int cuMemFree_v2(unsigned long long ptr) {
  std::free((void*)ptr);
  return kSuccess;
}

int cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t bytes) {
  std::memcpy((void*)dst, src, bytes);
  return kSuccess;
}

int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t bytes) {
  std::memcpy(dst, (const void*)src, bytes);
  return kSuccess;
}

int cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned sharedBytes, void* stream, void** params, void** extra) {
  if (!fn) return kInvalidHandle;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || stream || extra) return kInvalidValue;
  if ((unsigned long long)bx * by * bz > 1024 || sharedBytes > 48 * 1024) return kLaunchOutOfResources;
  const unsigned dims[6] = {gx, gy, gz, bx, by, bz};
  return ((Launcher)fn)(dims, params) == 0 ? kSuccess : kLaunchOutOfResources;
}

int cuGetErrorString(int r, const char** s) {
  switch (r) {
    case kSuccess: *s = "no error"; break;
    case kInvalidValue: *s = "invalid argument"; break;
    case kOutOfMemory: *s = "out of memory"; break;
    case kInvalidDevice: *s = "invalid device ordinal"; break;
    case kInvalidImage: *s = "device kernel image is invalid"; break;
    case kInvalidHandle: *s = "invalid resource handle"; break;
    case kNotFound: *s = "named symbol not found"; break;
    case kLaunchOutOfResources: *s = "too many resources requested for launch"; break;
    default: *s = "unknown error"; return kInvalidValue;
  }
  return kSuccess;
}

int cuEventCreate(void** e, unsigned) {
  *e = new Event{};
  return kSuccess;
}

int cuEventRecord(void* e, void* stream) {
  if (!e || stream) return kInvalidValue;
  ((Event*)e)->at = std::chrono::steady_clock::now();
  return kSuccess;
}

int cuEventSynchronize(void* e) { return e ? kSuccess : kInvalidHandle; }

int cuEventElapsedTime(float* ms, void* start, void* end) {
  if (!start || !end) return kInvalidHandle;
  *ms = std::chrono::duration<float, std::milli>(((Event*)end)->at - ((Event*)start)->at).count();
  return kSuccess;
}

int cuEventDestroy_v2(void* e) {
  delete (Event*)e;
  return kSuccess;
}

// ---- NVRTC ----

int nvrtcCreateProgram(Program** prog, const char* src, const char*, int numHeaders, const char* const*,
                       const char* const*) {
  if (!prog || !src || numHeaders != 0) return kNvrtcInvalidInput;
  *prog = new Program{src, "", ""};
  return kNvrtcSuccess;
}

int nvrtcDestroyProgram(Program** prog) {
  if (!prog || !*prog) return kNvrtcInvalidProgram;
  delete *prog;
  *prog = nullptr;
  return kNvrtcSuccess;
}

int nvrtcCompileProgram(Program* prog, int numOptions, const char* const* options) {
  if (!prog) return kNvrtcInvalidProgram;
  for (int i = 0; i < numOptions; i++) {
    std::string o = options[i];
    if (o.rfind("--gpu-architecture=compute_", 0) != 0 && o != "-default-device" && o.rfind("--std=c++", 0) != 0) {
      prog->log = "nvrtc (loom stand-in): unrecognized option " + o;
      return kNvrtcInvalidOption;
    }
  }
  std::vector<Kernel> ks;
  std::string err;
  if (!kernels(prog->src, &ks, &err)) {
    prog->log = "nvrtc (loom stand-in): " + err;
    return kNvrtcCompilation;
  }
  std::string dir = std::string(LOOM_EMU_DIR) + "/module-XXXXXX";
  if (!mkdtemp(dir.data())) {
    prog->log = "nvrtc (loom stand-in): cannot make a directory under " LOOM_EMU_DIR;
    return kNvrtcCompilation;
  }
  std::ofstream(dir + "/kernels.cpp") << "#include \"loom_emu.h\"\n" << prog->src << launchers(ks);
  std::string cmd = "g++ " LOOM_EMU_FLAGS " -shared -I'" LOOM_EMU_DIR "' -o '" + dir +
                    "/kernels.so' '" + dir + "/kernels.cpp' > '" + dir + "/log' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    readFile(dir + "/log", &prog->log);
    prog->log = "nvrtc (loom stand-in): g++ rejects the source:\n" + prog->log;
    return kNvrtcCompilation;
  }
  prog->image = "// loom's stand-in for PTX: the kernels built for this CPU\n" + std::string(kImageTag) + dir +
                "/kernels.so\n";
  return kNvrtcSuccess;
}

int nvrtcGetProgramLogSize(Program* prog, size_t* n) {
  if (!prog) return kNvrtcInvalidProgram;
  *n = prog->log.size() + 1;
  return kNvrtcSuccess;
}

int nvrtcGetProgramLog(Program* prog, char* log) {
  if (!prog) return kNvrtcInvalidProgram;
  std::memcpy(log, prog->log.c_str(), prog->log.size() + 1);
  return kNvrtcSuccess;
}

int nvrtcGetPTXSize(Program* prog, size_t* n) {
  if (!prog || prog->image.empty()) return kNvrtcInvalidProgram;
  *n = prog->image.size() + 1;
  return kNvrtcSuccess;
}

int nvrtcGetPTX(Program* prog, char* ptx) {
  if (!prog || prog->image.empty()) return kNvrtcInvalidProgram;
  std::memcpy(ptx, prog->image.c_str(), prog->image.size() + 1);
  return kNvrtcSuccess;
}

}  // extern "C"
