// oar-model: writes main.pb and startup.pb for a built-in recipe (linear, mlp, lenet, wide_deep,
// deepfm).
#include "api/recipes.h"
#include "feed/feed_overrides.h"
#include "feed/schema.h"
#include "support/error.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-model options");
// cl::desc keeps a StringRef: the text must outlive the option.
static const std::string modelHelp =
    "linear | mlp | lenet | wide_deep | deepfm (" + oar::ctrDefaultsText() + ")";
static cl::opt<std::string> model("model", cl::desc(modelHelp),
                                  cl::init("linear"), cl::cat(category));
static cl::opt<int64_t> embDim("emb-dim", cl::desc("wide_deep, deepfm: embedding width"),
                               cl::init(10), cl::cat(category));
static cl::opt<int64_t> vocab("vocab",
                              cl::desc("wide_deep, deepfm: table rows (keys are folded mod it; "
                                       "default: 4 rows a distinct key of --data, 1024 to 4194304)"),
                              cl::init(int64_t(1) << 22), cl::cat(category));
static cl::opt<int64_t> admitAfter("admit-after",
                                   cl::desc("wide_deep, deepfm: a key gets a table row at its Nth "
                                            "push (distributed tables)"),
                                   cl::init(1), cl::cat(category));
static cl::opt<float> admitProbability(
    "admit-probability",
    cl::desc("wide_deep, deepfm: the share of keys that may get a row (distributed tables)"),
    cl::init(1.0f), cl::cat(category));
static cl::opt<int64_t> evictAfter("evict-after",
                                   cl::desc("wide_deep, deepfm: drop rows unseen for N steps "
                                            "(distributed tables; 0: never)"),
                                   cl::init(0), cl::cat(category));
static cl::opt<bool> localTables(
    "local-tables",
    cl::desc("wide_deep, deepfm: keep the tables on the trainers when transpiled (default: on "
             "the pservers, is_distributed)"),
    cl::cat(category));
static cl::opt<int64_t> in("in", cl::desc("input width"), cl::init(13), cl::cat(category));
static cl::opt<std::string> hidden("hidden", cl::desc("mlp hidden sizes, comma separated"),
                                   cl::cat(category));
static cl::opt<std::string> act("act", cl::desc("relu | tanh | sigmoid"), cl::init("relu"),
                                cl::cat(category));
static cl::opt<int64_t> out("out", cl::desc("output width"), cl::init(1), cl::cat(category));
static cl::opt<std::string> loss("loss", cl::desc("square_error_cost | softmax_with_cross_entropy"),
                                 cl::init("square_error_cost"), cl::cat(category));
static cl::opt<std::string> optimizer("optimizer",
                                      cl::desc("sgd | momentum | adam | adamw | adagrad"),
                                      cl::init("sgd"), cl::cat(category));
// The training toolkit (docs/training.md).
static cl::opt<std::string> norm("norm",
                                 cl::desc("none | batch | layer: after each hidden fc, before "
                                          "its activation"),
                                 cl::init("none"), cl::cat(category));
static cl::opt<float> dropout("dropout",
                              cl::desc("drop probability after each hidden activation (0: none)"),
                              cl::init(0.0f), cl::cat(category));
static cl::opt<float> weightDecay("weight-decay",
                                  cl::desc("L2 decay added to each gradient; adamw: decoupled "
                                           "(default 0.01 there, 0 elsewhere)"),
                                  cl::init(0.0f), cl::cat(category));
static cl::opt<float> clipGlobalNorm("clip-global-norm",
                                     cl::desc("scale the dense gradients to this global norm at "
                                              "most (0: off)"),
                                     cl::init(0.0f), cl::cat(category));
static cl::opt<std::string> lrSchedule("lr-schedule",
                                       cl::desc("constant | step | exponential | cosine"),
                                       cl::init("constant"), cl::cat(category));
static cl::opt<int64_t> lrDecaySteps("lr-decay-steps", cl::desc("N of the schedule"), cl::init(1),
                                     cl::cat(category));
static cl::opt<float> lrDecayRate("lr-decay-rate", cl::desc("rate of step and exponential"),
                                  cl::init(1.0f), cl::cat(category));
static cl::opt<int64_t> warmupSteps("warmup-steps",
                                    cl::desc("raise the rate linearly over the first N updates"),
                                    cl::init(0), cl::cat(category));
static cl::opt<float> lr("lr", cl::desc("learning rate"), cl::init(0.01f), cl::cat(category));
static cl::opt<float> momentum("momentum", cl::desc("momentum factor"), cl::init(0.9f),
                               cl::cat(category));
static cl::opt<float> beta1("beta1", cl::desc("adam beta1"), cl::init(0.9f), cl::cat(category));
static cl::opt<float> beta2("beta2", cl::desc("adam beta2"), cl::init(0.999f), cl::cat(category));
static cl::opt<float> epsilon("epsilon",
                              cl::desc("adam, adamw, adagrad: epsilon (default 1e-8; adagrad 1e-6)"),
                              cl::init(1e-8f), cl::cat(category));
static cl::opt<float> initialAccumulator(
    "initial-accumulator",
    cl::desc("adagrad: the squared-gradient sum each weight starts from; above 0 it damps the "
             "first steps of weights seen once, such as rare ids' (default 0)"),
    cl::init(0.0f), cl::cat(category));
static cl::opt<int64_t> batchSize("batch-size", cl::desc("rows per step"), cl::init(32),
                                  cl::cat(category));
static cl::opt<int64_t> epochs("epochs", cl::desc("passes over the data"), cl::init(1),
                               cl::cat(category));
static cl::opt<int64_t> seed("seed", cl::desc("initializer and shuffle seed"), cl::init(1),
                             cl::cat(category));
static cl::opt<bool> shuffleRows("shuffle",
                                 cl::desc("shuffle rows each epoch (seeded; streamed files: in a "
                                          "buffer of 65536 rows); on for wide_deep and deepfm, "
                                          "--shuffle=false turns it off"),
                                 cl::cat(category));
static cl::opt<std::string> data("data", cl::desc("train data files, comma separated"),
                                 cl::cat(category));
static cl::opt<std::string> testData("test-data", cl::desc("test data files, comma separated"),
                                     cl::cat(category));
static cl::opt<std::string>
    dataFormat("format",
               cl::desc("uci_housing | mnist_idx | npy | csv | criteo; csv, tsv, slot, libffm "
                        "with named columns (--label, --dense, --sparse or --schema)"),
               cl::cat(category));
static cl::opt<std::string> labelColumn("label",
                                        cl::desc("the label's column (docs/data.md); by value: "
                                                 "NAME:positive=YES[:negative=NO]"),
                                        cl::cat(category));
static cl::opt<std::string> denseColumns(
    "dense",
    cl::desc("dense columns, comma separated, each NAME[:log1p | :standardize[:MEAN:STD] "
             "| :bucketize:B1:B2... | :bucketize:auto:N] (no numbers: computed from --data)"),
    cl::cat(category));
static cl::opt<std::string> crossColumns(
    "cross",
    cl::desc("crossed columns, comma separated, each A*B[*C][:deep] of sparse or bucketized "
             "columns: a slot of its own in the wide part (:deep: the deep part too)"),
    cl::cat(category));
static cl::opt<bool> rawDense("raw-dense",
                              cl::desc("wide_deep, deepfm: feed plain dense columns as they are "
                                       "(default: standardized from --data)"),
                              cl::cat(category));
static cl::opt<std::string> sparseColumns("sparse",
                                          cl::desc("categorical columns, comma separated, each "
                                                   "NAME[:int]"),
                                          cl::cat(category));
static cl::opt<std::string> schemaFile("schema",
                                       cl::desc("a schema file instead of --label, --dense and "
                                                "--sparse (docs/data.md)"),
                                       cl::cat(category));
static cl::opt<std::string> outDir("o", cl::desc("output directory"), cl::Required,
                                   cl::cat(category));
static cl::opt<bool> text("text", cl::desc("also write .pbtxt files"), cl::cat(category));

int main(int argc, char **argv) {
  oar::setToolVersion("oar-model");
  cl::HideUnrelatedOptions(category);
  oar::parseToolFlags(argc, argv, "oar-model",
                      "oar-model: write a built-in model as program files\n");
  ExitOnError exitOnErr("oar-model: error: ");
  oar::RecipeSpec spec;
  spec.model = model, spec.in = in, spec.out = out, spec.act = act, spec.loss = loss;
  spec.optimizer = optimizer, spec.lr = lr, spec.momentum = momentum;
  spec.beta1 = beta1, spec.beta2 = beta2;
  if (epsilon.getNumOccurrences())
    spec.epsilon = epsilon;
  spec.initialAccumulator = initialAccumulator;
  spec.norm = norm, spec.dropout = dropout, spec.weightDecay = weightDecay;
  spec.weightDecayGiven = weightDecay.getNumOccurrences() > 0;
  spec.clipGlobalNorm = clipGlobalNorm;
  spec.schedule = {lrSchedule, warmupSteps, lrDecaySteps, lrDecayRate};
  spec.batchSize = batchSize, spec.epochs = epochs, spec.seed = seed, spec.shuffle = shuffleRows;
  spec.format = dataFormat, spec.data = oar::splitFileList(data),
  spec.testData = oar::splitFileList(testData);
  spec.embDim = embDim, spec.vocab = vocab, spec.distributedTables = !localTables;
  spec.admitAfter = admitAfter, spec.admitProbability = admitProbability,
  spec.evictAfter = evictAfter;
  bool columnFlags = !labelColumn.empty() || !denseColumns.empty() || !sparseColumns.empty() ||
                     !crossColumns.empty();
  if (columnFlags && !schemaFile.empty())
    exitOnErr(oar::makeError("give the columns with --label, --dense and --sparse or with "
                             "--schema, not both"));
  if (!schemaFile.empty())
    spec.schema = exitOnErr(oar::readSchemaFile(schemaFile));
  else if (columnFlags)
    // A libffm or libsvm line's label is its first token: it needs no name.
    spec.schema = exitOnErr(oar::schemaFromFlags(
        labelColumn.empty() && (dataFormat == "libffm" || dataFormat == "libsvm")
            ? std::string("label")
            : labelColumn.getValue(),
        denseColumns, sparseColumns, crossColumns));
  for (const std::string &h : oar::splitFileList(hidden)) {
    int64_t v;
    if (StringRef(h).getAsInteger(10, v))
      exitOnErr(oar::makeError("--hidden: \"{0}\" is not an integer", h));
    spec.hidden.push_back(v);
  }
  // The flags on the command line, by name, read from argv (--name=value and --name value
  // alike): not from cl::getRegisteredOptions, whose entries include libLLVM's own options, on
  // which a member call is undefined behaviour to UBSan (that library has no RTTI).
  llvm::StringSet<> given;
  for (int i = 1; i < argc; ++i)
    if (StringRef a(argv[i]); a.size() > 1 && a[0] == '-' && a != "--")
      given.insert(a.ltrim('-').split('=').first);
  oar::applyCtrDefaults(spec, given);
  for (const std::string &line : exitOnErr(oar::fitRecipeToData(spec, given)))
    outs() << "oar-model: " << line << "\n";
  oar::ModelBuilder m = exitOnErr(oar::buildRecipe(spec));
  outs() << "oar-model: built with\n" << oar::describeRecipe(spec);
  exitOnErr(m.save(outDir, "written by oar-model --model=" + model, text));
  outs() << "wrote " << outDir << "/main.pb and " << outDir << "/startup.pb ("
         << m.main().blocks(0).ops_size() << " ops)\n";
  return 0;
}
