// Switching a program to evaluation.
#include "ops/test_mode.h"

#include "ops/op_registry.h"

namespace oar::ops {

static bool hasIsTest(const proto::Op &op) {
  const OpSchema *schema = lookupOp(op.type());
  return schema && schema->findAttr("is_test");
}

bool hasTrainingBehaviour(const proto::Program &program) {
  for (const proto::Block &block : program.blocks())
    for (const proto::Op &op : block.ops())
      if (hasIsTest(op) && !AttrReader(op, *lookupOp(op.type())).getBool("is_test"))
        return true;
  return false;
}

void setTestMode(proto::Program &program) {
  for (proto::Block &block : *program.mutable_blocks())
    for (proto::Op &op : *block.mutable_ops())
      if (hasIsTest(op))
        setAttr(op, "is_test", true);
}

} // namespace oar::ops
