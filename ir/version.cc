// The version string, from the build.
#include "ir/version.h"

namespace oar {

const char *versionString() { return OAR_VERSION; }

} // namespace oar
