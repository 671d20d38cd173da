// Flags made from a table of options.
#include "tools/common/option_flags.h"

#include <map>

namespace oar {

namespace cl = llvm::cl;

struct OptionFlags::Flag {
  const OptionTable::Option *option = nullptr;
  std::unique_ptr<cl::opt<bool>> toggle;      ///< a switch
  std::unique_ptr<cl::opt<std::string>> text; ///< anything else
  std::unique_ptr<cl::alias> underscored;     ///< the same flag spelt with underscores

  bool given() const {
    return toggle ? toggle->getNumOccurrences() > 0 : text->getNumOccurrences() > 0;
  }
  std::string value() const { return toggle ? (*toggle ? "true" : "false") : text->getValue(); }
};

OptionFlags::OptionFlags(const OptionTable &table) : table_(table) {
  std::map<std::string, cl::OptionCategory *> byGroup;
  for (const OptionTable::Option &o : table.options()) {
    cl::OptionCategory *&cat = byGroup[o.group];
    if (!cat)
      cat = &categories_.emplace_back(o.group);
    auto flag = std::make_unique<Flag>();
    flag->option = &o;
    cl::Option *made = nullptr;
    if (o.isSwitch) {
      flag->toggle =
          std::make_unique<cl::opt<bool>>(llvm::StringRef(o.name), cl::desc(o.help), cl::cat(*cat));
      made = flag->toggle.get();
    } else {
      flag->text = std::make_unique<cl::opt<std::string>>(
          llvm::StringRef(o.name), cl::desc(o.help), cl::value_desc(o.valueName), cl::cat(*cat));
      made = flag->text.get();
    }
    if (o.name.find('-') != std::string::npos) {
      std::string &alias = aliasNames_.emplace_back(o.name);
      for (char &c : alias)
        if (c == '-')
          c = '_';
      flag->underscored = std::make_unique<cl::alias>(llvm::StringRef(alias), cl::aliasopt(*made),
                                                      cl::Hidden, cl::cat(*cat));
    }
    flags_.push_back(std::move(flag));
  }
}

OptionFlags::~OptionFlags() = default;

llvm::Error OptionFlags::apply() const {
  for (const auto &flag : flags_)
    if (flag->given())
      if (llvm::Error err = flag->option->set(flag->value()))
        return err;
  return table_.finish();
}

std::vector<const cl::OptionCategory *> OptionFlags::categories() const {
  std::vector<const cl::OptionCategory *> out;
  for (const cl::OptionCategory &c : categories_)
    out.push_back(&c);
  return out;
}

} // namespace oar
