// .npy reading and writing.
#include "executor/npy.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "ir/write_file.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace oar {

namespace {
const char kMagic[] = "\x93NUMPY";

llvm::StringRef descrOf(DType d) {
  switch (d) {
  case proto::F32:
    return "<f4";
  case proto::F64:
    return "<f8";
  case proto::I32:
    return "<i4";
  case proto::I64:
    return "<i8";
  default:
    return "";
  }
}

/// IEEE half to float, every value exact (subnormals, inf and NaN included).
float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f)
    bits = sign | 0x7f800000u | (mant << 13);
  else if (exp != 0)
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  else if (mant == 0)
    bits = sign;
  else { // subnormal: normalise
    int shift = 0;
    while (!(mant & 0x400))
      mant <<= 1, ++shift;
    bits = sign | (uint32_t(113 - shift) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN (a NaN keeps a payload bit)
    return sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0);
  if (absx >= 0x477ff000u) // rounds past the largest half: inf
    return sign | 0x7c00;
  if (absx < 0x38800000u) { // a subnormal half (or zero): round the shifted mantissa
    if (absx < 0x33000000u)
      return sign;
    uint32_t mant = (absx & 0x7fffff) | 0x800000;
    int shift = 126 - static_cast<int>(absx >> 23); // 14..24
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1)))
      ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = ((absx >> 13) - (112u << 10)), rest = absx & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent, which is right
  return sign | static_cast<uint16_t>(half);
}

float halfBitsToFloat(uint16_t h) { return halfToFloat(h); }

namespace {

/// The value after `'key':` in the header dict, up to `end`.
llvm::StringRef headerField(llvm::StringRef header, llvm::StringRef key, char end) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == llvm::StringRef::npos)
    return "";
  llvm::StringRef rest = header.drop_front(at + key.size() + 2).ltrim(" :");
  return rest.take_until([end](char c) { return c == end; });
}
} // namespace

llvm::Expected<Tensor> readNpy(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return makeError("{0}: cannot read: {1}", path, buf.getError().message());
  llvm::StringRef bytes = (*buf)->getBuffer();
  if (bytes.size() < 10 || !bytes.startswith(llvm::StringRef(kMagic, 6)))
    return makeError("{0}: not a .npy file (bad magic)", path);
  uint8_t major = bytes[6];
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    offset = 10;
  } else {
    if (bytes.size() < 12)
      return makeError("{0}: truncated .npy header", path);
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    headerLen = len;
    offset = 12;
  }
  if (bytes.size() < offset + headerLen)
    return makeError("{0}: truncated .npy header", path);
  llvm::StringRef header = bytes.substr(offset, headerLen);
  llvm::StringRef descr = headerField(header, "descr", ',').trim(" '\"");
  if (headerField(header, "fortran_order", ',').trim() == "True")
    return makeError("{0}: Fortran-order arrays are not supported; save with C order", path);
  llvm::StringRef shapeText = headerField(header, "shape", ')').trim(" (");
  std::vector<int64_t> dims;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  shapeText.split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    int64_t d;
    if (p.trim().getAsInteger(10, d) || d < 0)
      return makeError("{0}: bad shape ({1}) in .npy header", path, shapeText);
    dims.push_back(d);
  }
  DType dtype;
  bool widenU8 = false, widenF16 = false;
  if (descr == "<f2") {
    dtype = proto::F32;
    widenF16 = true;
  } else if (descr == "<f4")
    dtype = proto::F32;
  else if (descr == "<f8")
    dtype = proto::F64;
  else if (descr == "<i4")
    dtype = proto::I32;
  else if (descr == "<i8")
    dtype = proto::I64;
  else if (descr == "|u1") {
    dtype = proto::I64;
    widenU8 = true;
  } else
    return makeError("{0}: dtype '{1}' is not supported (use float16, float32, float64, int32 or "
                     "int64)",
                     path, descr);
  // Check the shape against the bytes in the file before allocating anything: a header may
  // promise far more than the file holds.
  llvm::StringRef payload = bytes.drop_front(offset + headerLen);
  uint64_t want = widenU8 ? 1 : widenF16 ? 2 : dtypeSize(dtype);
  for (int64_t d : dims)
    if (__builtin_mul_overflow(want, static_cast<uint64_t>(d), &want))
      return makeError("{0}: shape {1} in the .npy header is too large", path, dimsString(dims));
  if (payload.size() != want)
    return makeError("{0}: data is {1} bytes but shape {2} needs {3}", path, payload.size(),
                     dimsString(dims), want);
  Tensor t(dtype, dims);
  if (widenU8)
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<int64_t>()[i] = static_cast<uint8_t>(payload[i]);
  else if (widenF16)
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint16_t h;
      std::memcpy(&h, payload.data() + 2 * i, 2);
      t.data<float>()[i] = halfToFloat(h);
    }
  else
    std::memcpy(t.raw(), payload.data(), want);
  return t;
}

/// Puts `path` on the disk, so that after a power cut a name renamed over afterwards holds the
/// old bytes or all of the new ones. Returns 0, or the errno of the failure.
static int syncToDisk(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

/// Writes `t` as a .npy file at `file`; errors name `path` (the name the caller gave). With
/// `asF16`, an f32 tensor is written as float16, rounded to nearest even.
static llvm::Error writeNpyFile(const std::string &file, llvm::StringRef path, const Tensor &t,
                                bool asF16 = false) {
  std::string shape = "(";
  for (int64_t d : t.dims())
    shape += std::to_string(d) + ", ";
  if (t.rank() > 1)
    shape.resize(shape.size() - 2);
  else if (t.rank() == 1)
    shape.resize(shape.size() - 1); // "(5,)"
  shape += ")";
  std::string header = llvm::formatv("{{'descr': '{0}', 'fortran_order': False, 'shape': {1}, }",
                                     asF16 ? "<f2" : descrOf(t.dtype()), shape)
                           .str();
  // Pad so the data starts on a 64-byte boundary; the header ends with a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  return writeFile(file, path, "", [&](llvm::raw_ostream &os) {
    os.write(kMagic, 6);
    os << '\x01' << '\x00';
    uint16_t len = static_cast<uint16_t>(header.size());
    os << static_cast<char>(len & 0xff) << static_cast<char>(len >> 8) << header;
    if (!asF16) {
      os.write(static_cast<const char *>(t.raw()), t.bytes());
      return;
    }
    std::vector<uint16_t> half(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i)
      half[i] = floatToHalf(t.data<float>()[i]);
    os.write(reinterpret_cast<const char *>(half.data()), half.size() * 2);
  });
}

llvm::Error writeNpySynced(llvm::StringRef file, llvm::StringRef path, const Tensor &t,
                           bool asF16) {
  if (llvm::Error err = writeNpyFile(file.str(), path, t, asF16)) {
    llvm::sys::fs::remove(file);
    return err;
  }
  if (int err = syncToDisk(file.str())) {
    llvm::sys::fs::remove(file);
    return makeError("{0}: write failed: cannot flush it to disk: {1}", path, std::strerror(err));
  }
  return llvm::Error::success();
}

llvm::Error writeNpy(llvm::StringRef path, const Tensor &t) {
  // Written under a temporary name, synced, then renamed over `path`: a crash or a full disk leaves
  // the old file or the new one, never half of one. A path that names something other than a file
  // (a device such as /dev/full, a pipe) is written directly: renaming over it would replace it.
  llvm::sys::fs::file_status st;
  bool special = !llvm::sys::fs::status(path, st) && llvm::sys::fs::exists(st) &&
                 st.type() != llvm::sys::fs::file_type::regular_file &&
                 st.type() != llvm::sys::fs::file_type::directory_file;
  if (special)
    return writeNpyFile(path.str(), path, t);
  std::string tmp = (path + ".tmp").str();
  if (llvm::Error err = writeNpySynced(tmp, path, t))
    return err;
  if (std::error_code renamed = llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    return makeError("{0}: cannot replace it: {1}", path, renamed.message());
  }
  return llvm::Error::success();
}

} // namespace oar
