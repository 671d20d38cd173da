// oar-keygen: CURVE key pairs for pservers and trainers.
#include "runtime/security/curve.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-keygen options");
static cl::list<std::string> names(cl::Positional, cl::OneOrMore,
                                   cl::desc("NAME... (each gets NAME.key and NAME.pub)"),
                                   cl::cat(category));

int main(int argc, char **argv) {
  oar::setToolVersion("oar-keygen");
  cl::HideUnrelatedOptions(category);
  oar::parseToolFlags(
      argc, argv, "oar-keygen",
      "oar-keygen: write CURVE key pairs\n\n"
      "  NAME.key holds the key pair (mode 0600): give it to that node only (--curve-secret).\n"
      "  NAME.pub holds the public key: pservers accept the trainers' (--curve-allow, the .pub\n"
      "  files joined), trainers check the pservers' (--curve-server-key).\n");
  ExitOnError exitOnErr("oar-keygen: error: ");
  for (const std::string &name : names) {
    oar::runtime::CurveKeyPair keys = exitOnErr(oar::runtime::newCurveKeyPair());
    exitOnErr(oar::runtime::writeCurveKeyPair(keys, name));
    outs() << name << ".key, " << name << ".pub: public key " << keys.publicKey << "\n";
  }
  return 0;
}
