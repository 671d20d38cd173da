// oar-show: one line per op for people and diffs; --dot draws Graphviz.
#include "ir/listing.h"
#include "tools/tool_version.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-show options");
static cl::list<std::string> inputs(cl::Positional, cl::desc("<program file or transpiled dir>..."),
                                    cl::OneOrMore, cl::cat(category));
static cl::opt<bool> dot("dot", cl::desc("write Graphviz instead of a listing"), cl::cat(category));
static cl::opt<bool> vars("vars", cl::desc("list vars before ops"), cl::cat(category));

int main(int argc, char **argv) {
  oar::setToolVersion("oar-show");
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "oar-show: list or draw oar programs\n");
  ExitOnError exitOnErr("oar-show: error: ");
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
