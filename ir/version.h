// The version of oar, as the build was configured (CMake's project version).
#pragma once

namespace oar {

/// "0.1.0".
const char *versionString();

} // namespace oar
