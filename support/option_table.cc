// Declaring settings and setting them from text.
#include "support/option_table.h"

#include <cmath>
#include <cstdio>

#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

namespace {

template <typename T>
llvm::Expected<T> parseInteger(llvm::StringRef name, llvm::StringRef text, T min, T max) {
  int64_t v = 0;
  if (text.getAsInteger(10, v))
    return OptionTable::refusal(name, text, "not an integer");
  if (v < static_cast<int64_t>(min) || v > static_cast<int64_t>(max))
    return OptionTable::refusal(name, text,
                                llvm::formatv("must be from {0} to {1}", min, max).str());
  return static_cast<T>(v);
}

llvm::Expected<double> parseNumber(llvm::StringRef name, llvm::StringRef text) {
  double v = 0;
  if (text.getAsDouble(v) || !std::isfinite(v))
    return OptionTable::refusal(name, text, "not a number");
  return v;
}

/// A number as people write it: 1, 0.25, 1e-06.
std::string numberText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string normalName(llvm::StringRef name) {
  std::string out = name.ltrim('-').str();
  for (char &c : out)
    if (c == '_')
      c = '-';
  return out;
}

} // namespace

llvm::Error OptionTable::refusal(llvm::StringRef name, llvm::StringRef value, llvm::StringRef why) {
  return makeError("--{0} {1}: {2}", name, value, why);
}

OptionTable &OptionTable::group(llvm::StringRef heading) {
  group_ = heading.str();
  return *this;
}

OptionTable &OptionTable::push(Option option, llvm::StringRef defaultText) {
  option.group = group_;
  if (!defaultText.empty())
    option.help += " (default " + defaultText.str() + ")";
  options_.push_back(std::move(option));
  return *this;
}

OptionTable &OptionTable::custom(llvm::StringRef name, llvm::StringRef valueName,
                                 llvm::StringRef help, llvm::StringRef defaultText,
                                 std::function<llvm::Error(llvm::StringRef)> set) {
  return push({name.str(), help.str(), valueName.str(), "", false, std::move(set)}, defaultText);
}

OptionTable &OptionTable::add(llvm::StringRef name, std::string &field, llvm::StringRef valueName,
                              llvm::StringRef help) {
  return custom(name, valueName, help, field, [&field](llvm::StringRef v) {
    field = v.str();
    return llvm::Error::success();
  });
}

OptionTable &OptionTable::add(llvm::StringRef name, std::optional<std::string> &field,
                              llvm::StringRef valueName, llvm::StringRef help) {
  return custom(name, valueName, help, "", [&field](llvm::StringRef v) {
    field = v.str();
    return llvm::Error::success();
  });
}

OptionTable &OptionTable::add(llvm::StringRef name, int64_t &field, llvm::StringRef help,
                              int64_t min, int64_t max) {
  return custom(name, "N", help, std::to_string(field),
                [&field, n = name.str(), min, max](llvm::StringRef v) -> llvm::Error {
                  return parseInteger<int64_t>(n, v, min, max).moveInto(field);
                });
}

OptionTable &OptionTable::add(llvm::StringRef name, int &field, llvm::StringRef help, int min,
                              int max) {
  return custom(name, "N", help, std::to_string(field),
                [&field, n = name.str(), min, max](llvm::StringRef v) -> llvm::Error {
                  return parseInteger<int>(n, v, min, max).moveInto(field);
                });
}

OptionTable &OptionTable::add(llvm::StringRef name, std::optional<int64_t> &field,
                              llvm::StringRef help, int64_t min, int64_t max) {
  return custom(name, "N", help, "",
                [&field, n = name.str(), min, max](llvm::StringRef v) -> llvm::Error {
                  auto parsed = parseInteger<int64_t>(n, v, min, max);
                  if (!parsed)
                    return parsed.takeError();
                  field = *parsed;
                  return llvm::Error::success();
                });
}

OptionTable &OptionTable::add(llvm::StringRef name, std::optional<int> &field, llvm::StringRef help,
                              int min, int max) {
  return custom(name, "N", help, "",
                [&field, n = name.str(), min, max](llvm::StringRef v) -> llvm::Error {
                  auto parsed = parseInteger<int>(n, v, min, max);
                  if (!parsed)
                    return parsed.takeError();
                  field = *parsed;
                  return llvm::Error::success();
                });
}

OptionTable &OptionTable::add(llvm::StringRef name, double &field, llvm::StringRef help, double min,
                              double max) {
  return custom(name, "X", help, numberText(field),
                [&field, n = name.str(), min, max](llvm::StringRef v) -> llvm::Error {
                  auto parsed = parseNumber(n, v);
                  if (!parsed)
                    return parsed.takeError();
                  if (*parsed < min || *parsed > max)
                    return refusal(n, v,
                                   "must be from " + numberText(min) + " to " + numberText(max));
                  field = *parsed;
                  return llvm::Error::success();
                });
}

OptionTable &OptionTable::add(llvm::StringRef name, std::optional<float> &field,
                              llvm::StringRef help) {
  return custom(name, "X", help, "", [&field, n = name.str()](llvm::StringRef v) -> llvm::Error {
    auto parsed = parseNumber(n, v);
    if (!parsed)
      return parsed.takeError();
    field = static_cast<float>(*parsed);
    return llvm::Error::success();
  });
}

OptionTable &OptionTable::add(llvm::StringRef name, bool &field, llvm::StringRef help) {
  Option o{name.str(),
           help.str(),
           "",
           "",
           true,
           [&field, n = name.str()](llvm::StringRef v) -> llvm::Error {
             if (v.empty() || v == "true" || v == "1")
               field = true;
             else if (v == "false" || v == "0")
               field = false;
             else
               return refusal(n, v, "expected true or false");
             return llvm::Error::success();
           }};
  return push(std::move(o), field ? "true" : "");
}

OptionTable &OptionTable::add(llvm::StringRef name, std::chrono::milliseconds &field,
                              llvm::StringRef help, int64_t minMs) {
  return custom(name, "MS", help, std::to_string(field.count()),
                [&field, n = name.str(), minMs](llvm::StringRef v) -> llvm::Error {
                  auto parsed = parseInteger<int64_t>(n, v, minMs, INT64_MAX / 1000);
                  if (!parsed)
                    return parsed.takeError();
                  field = std::chrono::milliseconds(*parsed);
                  return llvm::Error::success();
                });
}

OptionTable &OptionTable::check(std::function<llvm::Error()> check) {
  checks_.push_back(std::move(check));
  return *this;
}

llvm::Error OptionTable::set(llvm::StringRef name, llvm::StringRef value) const {
  std::string wanted = normalName(name);
  for (const Option &o : options_)
    if (o.name == wanted)
      return o.set(value);
  return makeError("unknown option {0}", name);
}

llvm::Error OptionTable::finish() const {
  for (const auto &check : checks_)
    if (llvm::Error err = check())
      return err;
  return llvm::Error::success();
}

} // namespace oar
