// The command-line flags of an OptionTable (support/option_table.h): one llvm::cl flag per
// option, listed under its group, with a hidden underscore spelling (Paddle's) beside the
// hyphenated one.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "support/option_table.h"
#include "llvm/Support/CommandLine.h"

namespace oar {

/// One per process: llvm::cl's registry keeps every flag and category for the process's life,
/// and a second flag of one name would abort.
class OptionFlags {
public:
  /// Makes the flags; call before the command line is parsed. The table (and the fields it
  /// declares) must outlive this.
  explicit OptionFlags(const OptionTable &table);
  ~OptionFlags();

  /// After parsing: sets every option given on the command line (the others keep their fields'
  /// values, so a value set before, from the environment say, stands), then runs the table's
  /// checks. Errors name the flag.
  llvm::Error apply() const;
  /// The categories the flags are listed under, for HideUnrelatedOptions.
  std::vector<const llvm::cl::OptionCategory *> categories() const;

private:
  struct Flag;
  const OptionTable &table_;
  std::deque<llvm::cl::OptionCategory> categories_;
  std::deque<std::string> aliasNames_;
  std::vector<std::unique_ptr<Flag>> flags_;
};

} // namespace oar
