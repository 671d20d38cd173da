// Click logs for the CTR tests, and what a tool's output says of them.
#pragma once

#include <string>
#include <vector>

#include "ir/program.h"

namespace oar {

/// A block declaring the criteo feed's vars (label f32[-1,1], dense f32[-1,13], sparse
/// i64[-1,26]), and a criteo feed of `files` into them, one epoch.
proto::Block criteoBlock();
proto::DataFeed criteoFeed(std::vector<std::string> files, int64_t batch);

/// oar-gen-ctr's files (train.txt: 40,000 lines, test.txt: 10,000) in a scratch directory, written
/// once per process (ctest runs test cases as processes side by side: each writes its own copy)
/// and removed at exit.
const std::string &ctrData();
/// The same with 160,000 training lines: enough that a model trained on it converges (its test
/// AUC then varies by about 0.001 from one async run to the next, 0.006 on ctrData's).
const std::string &moreCtrData();

/// The `test: ...` line of a tool's output (the last one), and its auc.
std::string testLine(const std::string &output);
double aucOf(const std::string &output);
/// The labels of a criteo file (the first field of each line).
std::vector<float> criteoLabels(const std::string &path);
/// The bucketed AUC (the auc op's, 4095 thresholds) of `scores` against `labels`.
double bucketedAuc(const std::vector<float> &scores, const std::vector<float> &labels);
/// The first column of a scores file (oar-predict's, --test-scores'), a value per line.
std::vector<float> readScores(const std::string &path);

} // namespace oar
