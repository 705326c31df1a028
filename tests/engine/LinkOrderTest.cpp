// This program's std::filesystem calls reach libstdc++, not the copies of those functions that LibTorch 2.x's
// libtorch.so and libtorch_cpu.so export (pytorch/pytorch#133437; remove_all(path) there jumps to address 0).
// cmake/Dependencies.cmake puts libstdc++ first on every link line for that. Against LibTorch 2.11 without it, the
// first test fails and the second crashes.
#include "TestSupport.h"

#include <dlfcn.h>
#include <link.h>

#include <fstream>
#include <string>
#include <utility>

namespace fs = std::filesystem;

namespace {

bool libTorchLoaded()
{
    bool found = false;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            if (std::string(info->dlpi_name).find("libtorch") != std::string::npos)
                *static_cast<bool*>(data) = true;
            return 0;
        },
        &found);
    return found;
}

// The file of the loaded object that defines the function at this address.
std::string definingObject(const void* address)
{
    Dl_info info {};
    if (dladdr(address, &info) == 0 || !info.dli_fname)
        return "(unknown)";
    return info.dli_fname;
}

} // namespace

TEST(LinkOrder, FilesystemFunctionsAreLibstdcxxs)
{
    ASSERT_TRUE(libTorchLoaded()) << "the test means something only in a program that loads LibTorch";
    // In a position-independent executable (Debian's gcc makes them by default) a function's address is read from
    // the same relocated entry that calls go through: it is the definition the program's calls reach.
    using RemoveAll = std::uintmax_t (*)(const fs::path&);
    using RemoveAllNoThrow = std::uintmax_t (*)(const fs::path&, std::error_code&);
    using CreateDirectories = bool (*)(const fs::path&);
    using Status = fs::file_status (*)(const fs::path&);
    using FileSize = std::uintmax_t (*)(const fs::path&);
    using TempDirectoryPath = fs::path (*)();
    const std::pair<const char*, const void*> functions[] = {
        { "remove_all(const path&)", reinterpret_cast<const void*>(static_cast<RemoveAll>(&fs::remove_all)) },
        { "remove_all(const path&, error_code&)",
            reinterpret_cast<const void*>(static_cast<RemoveAllNoThrow>(&fs::remove_all)) },
        { "create_directories(const path&)",
            reinterpret_cast<const void*>(static_cast<CreateDirectories>(&fs::create_directories)) },
        { "status(const path&)", reinterpret_cast<const void*>(static_cast<Status>(&fs::status)) },
        { "file_size(const path&)", reinterpret_cast<const void*>(static_cast<FileSize>(&fs::file_size)) },
        { "temp_directory_path()",
            reinterpret_cast<const void*>(static_cast<TempDirectoryPath>(&fs::temp_directory_path)) },
    };
    for (const auto& [name, address] : functions) {
        const std::string object = definingObject(address);
        EXPECT_NE(object.find("libstdc++"), std::string::npos) << "std::filesystem::" << name << " is in " << object;
    }
}

TEST(LinkOrder, FilesystemCallsWork)
{
    const fs::path dir = attnscope::test::scratchDir("link-order");
    fs::create_directories(dir / "a" / "b");
    std::ofstream(dir / "a" / "b" / "file") << "12345";
    EXPECT_EQ(fs::file_size(dir / "a" / "b" / "file"), 5u);
    EXPECT_TRUE(fs::is_directory(fs::status(dir / "a")));
    EXPECT_EQ(fs::remove_all(dir / "a"), 3u); // the throwing overload: the one that jumped to 0
    EXPECT_FALSE(fs::exists(dir / "a"));
    std::error_code error;
    EXPECT_EQ(fs::remove_all(dir, error), 1u);
    EXPECT_FALSE(error) << error.message();
}
