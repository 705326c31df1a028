#pragma once

namespace attnscope {

// Qt asks for the user's runtime folder (QStandardPaths::RuntimeLocation) while a Q(Gui)Application starts; where
// XDG_RUNTIME_DIR is not set (root in a container, a batch job, ssh without a session) it prints "QStandardPaths:
// XDG_RUNTIME_DIR not set, defaulting to '/tmp/runtime-root'" on stderr and uses that folder. This does the same
// without the noise, before the application is created: makes <TMPDIR or /tmp>/runtime-<user> (mode 0700, owned by
// this user, as Qt would) and sets XDG_RUNTIME_DIR to it. Where XDG_RUNTIME_DIR is set, or that folder exists and is
// not this user's folder, nothing changes (Qt then says what is wrong itself).
void ensureRuntimeDir();

} // namespace attnscope
