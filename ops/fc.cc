// fc: one fully connected layer as one op, Out = act(flatten(Input) * W + Bias). Nothing builds
// it while training (a layer there is mul, elementwise_add and an activation, each with its
// gradient); the predictor fuses those into it (serving/fuse_fc.h) so a layer makes one pass
// over its output and no intermediate tensors.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferFc(InferContext &ctx) {
  const VarType &x = ctx.input("Input"), &w = ctx.input("W"), &b = ctx.input("Bias");
  int64_t xn = ctx.attrs().getInt("in_num_col_dims");
  if (xn < 1 || xn >= x.rank())
    return makeError("in_num_col_dims={0} must be in [1, rank); {1}", xn, ctx.describe("Input"));
  if (w.rank() != 2 || w.dtype != x.dtype || b.dtype != x.dtype)
    return makeError("{0}, {1} and {2}: W must be a matrix and the dtypes must match",
                     ctx.describe("Input"), ctx.describe("W"), ctx.describe("Bias"));
  int64_t cols = dimProduct(x.dims, xn, x.rank());
  if (!dimsAgree(cols, w.dims[0]))
    return makeError("{0} but {1}; Input's columns ({2}) must equal W's rows",
                     ctx.describe("Input"), ctx.describe("W"), cols);
  if (b.rank() != 1 || !dimsAgree(b.dims[0], w.dims[1]))
    return makeError("{0}; Bias must hold one value per column of {1}", ctx.describe("Bias"),
                     ctx.describe("W"));
  if (ctx.hasInput("WBf16")) {
    const VarType &wb = ctx.input("WBf16");
    if (wb.dtype != proto::BF16 || wb.rank() != 1)
      return makeError("{0}; WBf16 must be W ({1}) packed in bf16, a vector", ctx.describe("WBf16"),
                       ctx.describe("W"));
  }
  if (ctx.hasInput("WPadded")) {
    const VarType &wp = ctx.input("WPadded");
    // (Unknown dims, -1, agree with anything.)
    int64_t rows = w.dims[0] < 0 ? -1 : w.dims[0] + 1;
    int64_t columns = w.dims[1] < 0 ? -1 : (w.dims[1] + 15) / 16 * 16;
    if (wp.dtype != proto::F32 || wp.rank() != 2 || !dimsAgree(wp.dims[0], rows) ||
        !dimsAgree(wp.dims[1], columns))
      return makeError("{0}; WPadded must be W ({1}) and Bias, each row padded to a multiple of "
                       "16 columns: f32 [{2}, {3}]",
                       ctx.describe("WPadded"), ctx.describe("W"), rows, columns);
  }
  std::string act = ctx.attrs().getString("activation");
  if (act != "" && act != "relu")
    return makeError("activation \"{0}\" is not one of \"\" or relu", act);
  VarType out;
  out.dtype = x.dtype;
  out.dims.append(x.dims.begin(), x.dims.begin() + xn);
  out.dims.push_back(w.dims[1]);
  ctx.setOutput("Out", out);
  return requireFloat(ctx, "Input");
}

OAR_OP(fc)
    .summary("Out = activation(flatten(Input) * W + Bias): mul, elementwise_add and relu in one")
    .input("Input", "the layer's input")
    .input("W", "the weight, [in, out]")
    .input("Bias", "the bias, [out]")
    .input("WBf16",
           "W rounded to bf16 in oneDNN's blocks for this CPU (packBf16Weights): when given, the "
           "product runs in bfloat16 (the input rounded too; serving/bf16_layer.h), for f32 "
           "models only",
           kOptional)
    .input("WPadded",
           "W's rows and then Bias, each padded with zeros to a multiple of 16 columns "
           "(padWeightRows): when given and at most 40% of Input's entries are nonzero, the "
           "layer sums only those (serving/sparse_input_layer.h), for f32 models only",
           kOptional)
    .output("Out", "Input's leading dims followed by W's columns")
    .attr<int64_t>("in_num_col_dims", 1, "Input's dims before this index form the rows")
    .attr<std::string>("activation", "", "applied after the bias: \"\" (none) or relu")
    .inferShape(inferFc)
    .noGrad("serving only: the predictor fuses a trained layer into it");

} // namespace oar::ops
