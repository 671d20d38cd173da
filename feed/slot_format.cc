// Paddle's slot files: `clicked:1 user:u17 item:it9 price:20.5`, tokens separated by spaces
// or tabs, each `name:value` (the value is what follows the first colon). Slots the schema does
// not use are ignored; a slot the line lacks is missing (a key of its own, or 0).
#include <array>
#include <cstring>

#include "feed/line_format.h"
#include "ir/error.h"

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
      // One pass over each token: its name up to the first ':', its value up to a space or tab.
      while (at < end && (*at == ' ' || *at == '\t'))
        ++at;
      if (at == end)
        break;
      const char *begin = at;
      while (at < end && *at != ':' && *at != ' ' && *at != '\t')
        ++at;
      if (at == end || *at != ':')
        return makeError("token \"{0}\" is not name:value", llvm::StringRef(begin, at - begin));
      llvm::StringRef name(begin, at - begin);
      const char *valueBegin = ++at;
      while (at < end && *at != ' ' && *at != '\t')
        ++at;
      llvm::StringRef value(valueBegin, at - valueBegin);
      const ColumnRole *role = roleAfter(after, name);
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
                         name);
      if (llvm::Error err = columns_.setCell(*role, value, rows, r))
        return err;
    }
    return columns_.finishLine(seen_, rows, r);
  }

private:
  /// The role of the slot named `name`, which follows a token of role `after` (an index into
  /// the roles, kLineStart or kUnknown). Lines of a file mostly list their slots in one order, so
  /// the name that followed `after` last time is checked first: cheaper than a lookup by name.
  /// Two names are kept per predecessor: a slot that is sometimes missing leaves two orders.
  const ColumnRole *roleAfter(size_t after, llvm::StringRef name) {
    Follower *f = next_[after].data();
    for (int way = 0; way < 2; ++way)
      if (f[way].is(name))
        return f[way].role;
    f[1] = f[0];
    f[0].set(name, columns_.find(name));
    return f[0].role;
  }

  /// A name and its role; names up to 24 bytes are compared in place, longer ones looked up.
  struct Follower {
    char name[24];
    uint8_t size = 255; ///< 255: empty
    const ColumnRole *role = nullptr;
    bool is(llvm::StringRef n) const {
      if (n.size() != size)
        return false;
      for (size_t i = 0; i < n.size(); ++i) // names are a few bytes: cheaper than a memcmp call
        if (name[i] != n[i])
          return false;
      return true;
    }
    void set(llvm::StringRef n, const ColumnRole *r) {
      size = n.size() <= sizeof name ? static_cast<uint8_t>(n.size()) : 255;
      std::memcpy(name, n.data(), std::min(n.size(), sizeof name));
      role = r;
    }
  };
  const size_t kLineStart = columns_.roles().size(), kUnknown = kLineStart + 1;
  std::vector<int64_t> seen_;
  std::vector<std::array<Follower, 2>> next_; ///< by role index, then kLineStart and kUnknown
};

} // namespace

std::unique_ptr<LineFormat> makeSlotFormat(const SchemaColumns &columns) {
  return std::make_unique<SlotFormat>(columns);
}

} // namespace oar
