// The settings a role takes, each declared once: its name, help and default, and the field its
// value goes to. Each options type declares its own (`declare(OptionTable &)`); the tools' flags
// (tools/common/option_flags.h) and any other front end are made from the table, so no setting
// is spelt, defaulted or explained twice.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {

class OptionTable {
public:
  /// One setting.
  struct Option {
    std::string name;      ///< as a flag is spelt, without dashes: "checkpoint-every"
    std::string help;      ///< one sentence or two, ending with the default when it has one
    std::string valueName; ///< what the value is ("N", "DIR", "MS"); "" for a switch
    std::string group;     ///< the heading it is listed under
    bool isSwitch = false; ///< a bool: given alone, it is true
    /// Parses `value` and stores it; an error names the option and says what it takes.
    std::function<llvm::Error(llvm::StringRef value)> set;
  };

  /// Options added from now on are listed under `heading`.
  OptionTable &group(llvm::StringRef heading);

  /// A text value (a path, a list, a name).
  OptionTable &add(llvm::StringRef name, std::string &field, llvm::StringRef valueName,
                   llvm::StringRef help);
  /// A text value that is unset unless given.
  OptionTable &add(llvm::StringRef name, std::optional<std::string> &field,
                   llvm::StringRef valueName, llvm::StringRef help);
  /// An integer in [min, max]; the default is the field's value now.
  OptionTable &add(llvm::StringRef name, int64_t &field, llvm::StringRef help,
                   int64_t min = INT64_MIN, int64_t max = INT64_MAX);
  OptionTable &add(llvm::StringRef name, int &field, llvm::StringRef help, int min = INT32_MIN,
                   int max = INT32_MAX);
  /// An integer that is unset unless given.
  OptionTable &add(llvm::StringRef name, std::optional<int64_t> &field, llvm::StringRef help,
                   int64_t min = INT64_MIN, int64_t max = INT64_MAX);
  OptionTable &add(llvm::StringRef name, std::optional<int> &field, llvm::StringRef help,
                   int min = INT32_MIN, int max = INT32_MAX);
  /// A number in [min, max].
  OptionTable &add(llvm::StringRef name, double &field, llvm::StringRef help, double min = -1e300,
                   double max = 1e300);
  /// A number that is unset unless given.
  OptionTable &add(llvm::StringRef name, std::optional<float> &field, llvm::StringRef help);
  /// A switch: `--name` or `--name=true|false`.
  OptionTable &add(llvm::StringRef name, bool &field, llvm::StringRef help);
  /// A duration in milliseconds, at least `minMs`.
  OptionTable &add(llvm::StringRef name, std::chrono::milliseconds &field, llvm::StringRef help,
                   int64_t minMs = 0);
  /// One of the named `choices`; the default is the name of the field's value now.
  template <typename T>
  OptionTable &choice(llvm::StringRef name, T &field,
                      std::vector<std::pair<std::string, T>> choices, llvm::StringRef help) {
    std::string names, current;
    for (const auto &[text, value] : choices) {
      names += (names.empty() ? "" : " | ") + text;
      if (value == field && current.empty())
        current = text;
    }
    return custom(name, names, help, current,
                  [&field, choices, names, n = name.str()](llvm::StringRef v) -> llvm::Error {
                    for (const auto &[text, value] : choices)
                      if (v == text) {
                        field = value;
                        return llvm::Error::success();
                      }
                    return refusal(n, v, "expected " + names);
                  });
  }
  /// Anything else: `set` parses the value. `defaultText` ends the help ("" for none).
  OptionTable &custom(llvm::StringRef name, llvm::StringRef valueName, llvm::StringRef help,
                      llvm::StringRef defaultText, std::function<llvm::Error(llvm::StringRef)> set);
  /// A check over several options, run by finish() after every given option is set.
  OptionTable &check(std::function<llvm::Error()> check);

  const std::vector<Option> &options() const { return options_; }
  /// Sets option `name` (with dashes or underscores) from text; an error if there is none.
  llvm::Error set(llvm::StringRef name, llvm::StringRef value) const;
  /// Runs the checks, in the order they were added.
  llvm::Error finish() const;

  /// "--NAME VALUE: WHY", the refusal of a value.
  static llvm::Error refusal(llvm::StringRef name, llvm::StringRef value, llvm::StringRef why);

private:
  OptionTable &push(Option option, llvm::StringRef defaultText);
  std::vector<Option> options_;
  std::vector<std::function<llvm::Error()>> checks_;
  std::string group_;
};

} // namespace oar
