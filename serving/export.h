// An exported model: what serving needs of a trained one and nothing else. On disk:
//   inference.pb (and .pbtxt)   the inference program (serving/inference_program.h)
//   params/<var>.npy            its dense params
//   tables/<T>/keys.npy         each table's keys, sorted (uint64 as i64)
//   tables/<T>/values.npy       their weights (f32, or f16 with --f16), no optimizer state
//   tables/<T>/table.txt        the table's width and how a key it lacks starts
//   EXPORT                      where it came from and what was dropped
#pragma once

#include <map>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/table_files.h"

namespace oar {

struct ExportOptions {
  /// The vars to serve; empty: the model's (servedOutputs).
  std::vector<std::string> outputs;
  /// Drop table rows pushed fewer than `minPushes` times, or not pushed in the last
  /// `maxUnseenSteps` steps (0: keep them), as Paddle's shrink: a dropped key reads its initial
  /// weights.
  int64_t minPushes = 0, maxUnseenSteps = 0;
  /// Write table values as float16 (half the bytes; the predictor widens them when it loads).
  bool f16 = false;
};

/// One exported table.
struct ExportedTable {
  TableInfo info; ///< optimizer empty: values hold weights alone
  Tensor keys, values;
  int64_t dropped = 0; ///< rows the shrink options left out
};

struct ExportedModel {
  proto::Program program;
  std::map<std::string, Tensor> params;
  std::map<std::string, ExportedTable> tables;
  std::string source; ///< what it was exported from
  ExportOptions options;
};

/// The export of the model `main`/`startup` with the trained values of `ckpt` (any layout).
/// Errors name what the checkpoint lacks.
llvm::Expected<ExportedModel> exportModel(const proto::Program &main, const proto::Program &startup,
                                          const CheckpointReader &ckpt,
                                          const ExportOptions &options);

/// Writes `model` into `dir` (replacing an export there; any other non-empty directory is an
/// error), every file synced and the directory put in place by a rename.
llvm::Error writeExport(const ExportedModel &model, llvm::StringRef dir);

/// Reads an export written by writeExport. Errors name the file.
llvm::Expected<ExportedModel> readExport(llvm::StringRef dir);

/// A few lines on an export for people: inputs, outputs, ops, params and tables.
std::string describeExport(const ExportedModel &model);

} // namespace oar
