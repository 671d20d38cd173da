#include "tools/common/bucket_flags.h"

namespace oar {

namespace cl = llvm::cl;

BucketFlags::BucketFlags(cl::OptionCategory &category)
    : firstBucketMb("first-bucket-mb",
                    cl::desc("collective jobs: the first gradient bucket, in MiB: its all-reduce "
                             "starts once backward has finished that many bytes of gradients "
                             "(PyTorch DDP's 1; hybrid jobs sum their gradients after backward)"),
                    cl::init(1), cl::cat(category)),
      bucketMb("bucket-mb",
               cl::desc("collective jobs: the other gradient buckets, in MiB (DDP's 25); 0: one "
                        "all-reduce of every gradient after backward"),
               cl::init(25), cl::cat(category)) {}

llvm::Error BucketFlags::apply(DistributeConfig &config) const {
  return setBucketsFromFlags(config, firstBucketMb, bucketMb);
}

} // namespace oar
