#include "worker/RuntimeDir.h"

#include <cerrno>
#include <cstdlib>
#include <pwd.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace attnscope {

void ensureRuntimeDir()
{
    if (const char* set = std::getenv("XDG_RUNTIME_DIR"); set && *set)
        return;
    // Qt's choice of folder (qstandardpaths_unix.cpp): QDir::tempPath() + "/runtime-" + the user's name.
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = tmp && *tmp ? tmp : "/tmp";
    while (dir.size() > 1 && dir.back() == '/')
        dir.pop_back();
    const uid_t uid = geteuid();
    const passwd* user = getpwuid(uid);
    dir += "/runtime-" + (user && user->pw_name ? std::string(user->pw_name) : std::to_string(uid));
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return;
    struct stat st { };
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid)
        return;
    if ((st.st_mode & 07777) != 0700 && chmod(dir.c_str(), 0700) != 0)
        return;
    setenv("XDG_RUNTIME_DIR", dir.c_str(), 1);
}

} // namespace attnscope
