// oar-show: one line per op for people and diffs; --dot draws Graphviz. Given an export's
// directory, it says what the export holds first.
#include "ir/listing.h"
#include "serving/export.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-show options");
static cl::list<std::string> inputs(cl::Positional,
                                    cl::desc("<program file, transpiled dir or export dir>..."),
                                    cl::OneOrMore, cl::cat(category));
static cl::opt<bool> dot("dot", cl::desc("write Graphviz instead of a listing"), cl::cat(category));
static cl::opt<bool> vars("vars", cl::desc("list vars before ops"), cl::cat(category));

int main(int argc, char **argv) {
  oar::setToolVersion("oar-show");
  cl::HideUnrelatedOptions(category);
  oar::parseToolFlags(argc, argv, "oar-show", "oar-show: list or draw oar programs\n");
  ExitOnError exitOnErr("oar-show: error: ");
  if (inputs.size() == 1 && sys::fs::exists(inputs[0] + "/inference.pb") && !dot) {
    oar::ExportedModel model = exitOnErr(oar::readExport(inputs[0]));
    outs() << oar::describeExport(model) << oar::listing(model.program, vars);
    return 0;
  }
  auto programs = exitOnErr(oar::loadProgramsForShow({inputs.begin(), inputs.end()}));
  if (dot) {
    outs() << oar::dotGraph(programs);
    return 0;
  }
  for (const auto &[name, prog] : programs) {
    if (programs.size() > 1)
      outs() << "# " << name << "\n";
    outs() << oar::listing(prog, vars);
  }
  return 0;
}
