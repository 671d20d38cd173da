// Paddle's slot files: `clicked:1 user:u17 item:it9 price:20.5`, tokens separated by spaces
// or tabs, each `name:value` (the value is what follows the first colon). Slots the schema does
// not use are ignored; a slot the line lacks is missing (a key of its own, or 0).
#include <array>
#include <cstring>

#include "feed/line_format.h"
#include "support/error.h"

namespace oar {

namespace {

class SlotFormat : public LineFormat {
public:
  explicit SlotFormat(const SchemaColumns &columns)
      : LineFormat(columns), seen_(columns.roles().size()), next_(columns.roles().size() + 2) {}

  llvm::Error parse(llvm::StringRef line, FeedRows &rows, int64_t r) override {
    std::fill(seen_.begin(), seen_.end(), 0); // values of each role on this line
    const ColumnRole *first = columns_.roles().data();
    size_t after = kLineStart;
    for (const char *at = line.begin(), *end = line.end();;) {
      while (at < end && (*at == ' ' || *at == '\t'))
        ++at;
      if (at == end)
        break;
      // The token's name: most often the one that followed the previous slot last time, checked
      // in place; else scanned up to the first ':' and looked up.
      const ColumnRole *role;
      if (const Follower *f = expected(after, at, end)) {
        role = f->role;
        at += f->size + 1;
      } else {
        const char *begin = at;
        while (at < end && *at != ':' && *at != ' ' && *at != '\t')
          ++at;
        if (at == end || *at != ':')
          return makeError("token \"{0}\" is not name:value", llvm::StringRef(begin, at - begin));
        role = learn(after, llvm::StringRef(begin, at - begin));
        ++at;
      }
      const char *valueBegin = at;
      while (at < end && *at != ' ' && *at != '\t')
        ++at;
      llvm::StringRef value(valueBegin, at - valueBegin);
      after = role ? static_cast<size_t>(role - first) : kUnknown;
      if (!role)
        continue;
      int64_t &values = seen_[role - first];
      if (role->kind == ColumnRole::Multi) { // a slot named again gives it another value
        if (llvm::Error err = columns_.addValue(*role, value, rows, r, values))
          return err;
        continue;
      }
      if (values++)
        return makeError("slot {0} has more than one value on this line; declare it multi N to "
                         "read several",
                         role->name);
      if (llvm::Error err = columns_.setCell(*role, value, rows, r))
        return err;
    }
    return columns_.finishLine(seen_, rows, r);
  }

private:
  /// A name and its role; names up to 24 bytes are compared in place, longer ones looked up.
  struct Follower {
    char name[24];
    uint8_t size = 255; ///< 255: empty
    const ColumnRole *role = nullptr;
    /// Whether the text at `at` is this name and a ':'.
    bool startsToken(const char *at, const char *end) const {
      if (size == 255 || end - at <= size || at[size] != ':')
        return false;
      for (size_t i = 0; i < size; ++i) // names are a few bytes: cheaper than a memcmp call
        if (name[i] != at[i])
          return false;
      return true;
    }
    void set(llvm::StringRef n, const ColumnRole *r) {
      size = n.size() <= sizeof name ? static_cast<uint8_t>(n.size()) : 255;
      std::memcpy(name, n.data(), std::min(n.size(), sizeof name));
      role = r;
    }
  };

  /// Lines of a file mostly list their slots in one order, so the names that followed a token of
  /// role `after` (an index into the roles, kLineStart or kUnknown) are kept, and the text at
  /// `at` is checked against them first: cheaper than scanning the name and looking it up. Two
  /// names per predecessor: a slot that is sometimes missing leaves two orders.
  const Follower *expected(size_t after, const char *at, const char *end) const {
    for (const Follower &f : next_[after])
      if (f.startsToken(at, end))
        return &f;
    return nullptr;
  }
  /// The role of `name` (null when the schema does not use it), remembered as following `after`.
  const ColumnRole *learn(size_t after, llvm::StringRef name) {
    Follower *f = next_[after].data();
    f[1] = f[0];
    f[0].set(name, columns_.find(name));
    return f[0].role;
  }

  const size_t kLineStart = columns_.roles().size(), kUnknown = kLineStart + 1;
  std::vector<int64_t> seen_;
  std::vector<std::array<Follower, 2>> next_; ///< by role index, then kLineStart and kUnknown
};

} // namespace

std::unique_ptr<LineFormat> makeSlotFormat(const SchemaColumns &columns) {
  return std::make_unique<SlotFormat>(columns);
}

} // namespace oar
