#include "attnscope/Datasets.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace attnscope {

namespace fs = std::filesystem;

namespace {

// Reads a whole (optionally gzip-compressed) file; zlib's gz reader passes plain files through unchanged.
bool readGz(const std::string& path, std::string& out)
{
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f)
        return false;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0)
        out.append(buf, size_t(n));
    const bool ok = n == 0;
    gzclose(f);
    return ok;
}

uint32_t bigEndian32(const std::string& s, size_t offset)
{
    return uint32_t(uint8_t(s[offset])) << 24 | uint32_t(uint8_t(s[offset + 1])) << 16 | uint32_t(uint8_t(s[offset + 2])) << 8
        | uint32_t(uint8_t(s[offset + 3]));
}

std::string findIdx(const std::string& dir, const std::string& stem)
{
    for (const char* ext : { ".gz", "" })
        if (fs::is_regular_file(fs::path(dir) / (stem + ext)))
            return (fs::path(dir) / (stem + ext)).string();
    return {};
}

// Lower-case letters and digits only: the form in which a folder name and a class name are compared.
std::string folded(const std::string& name)
{
    std::string out;
    for (unsigned char ch : name)
        if (std::isalnum(ch))
            out += char(std::tolower(ch));
    return out;
}

} // namespace

int classOfFolder(const std::string& imagePath, const std::vector<std::string>& labels)
{
    const std::string folder = folded(fs::path(imagePath).parent_path().filename().string());
    if (folder.empty())
        return -1;
    for (size_t c = 0; c < labels.size(); ++c)
        if (folded(labels[c]) == folder)
            return int(c);
    return -1;
}

std::vector<int> classesOfFolders(const std::vector<std::string>& imagePaths, const std::vector<std::string>& labels)
{
    std::vector<int> out;
    out.reserve(imagePaths.size());
    for (const auto& path : imagePaths)
        out.push_back(classOfFolder(path, labels));
    return out;
}

Result<LabelledImages> readFashionMnist(const std::string& dir, const std::string& split, int limit)
{
    if (split != "train" && split != "test")
        return Error { "Fashion-MNIST split must be train or test" };
    const std::string prefix = split == "train" ? "train" : "t10k";
    const std::string imagesPath = findIdx(dir, prefix + "-images-idx3-ubyte");
    const std::string labelsPath = findIdx(dir, prefix + "-labels-idx1-ubyte");
    if (imagesPath.empty() || labelsPath.empty())
        return Error { dir + ": no Fashion-MNIST " + split + " files (" + prefix + "-images-idx3-ubyte[.gz]); install dataset-fashion-mnist" };
    std::string images, labels;
    if (!readGz(imagesPath, images))
        return Error { imagesPath + ": cannot read" };
    if (!readGz(labelsPath, labels))
        return Error { labelsPath + ": cannot read" };
    if (images.size() < 16 || bigEndian32(images, 0) != 0x803)
        return Error { imagesPath + ": not an IDX image file" };
    if (labels.size() < 8 || bigEndian32(labels, 0) != 0x801)
        return Error { labelsPath + ": not an IDX label file" };
    const uint32_t count = bigEndian32(images, 4), rows = bigEndian32(images, 8), cols = bigEndian32(images, 12);
    if (bigEndian32(labels, 4) != count || images.size() < 16 + size_t(count) * rows * cols || labels.size() < 8 + size_t(count))
        return Error { imagesPath + ": image and label counts or sizes disagree" };
    LabelledImages out;
    out.classNames = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot" };
    const uint32_t n = limit > 0 ? std::min<uint32_t>(count, uint32_t(limit)) : count;
    out.images.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
        Image img;
        img.width = int(cols);
        img.height = int(rows);
        img.channels = 1;
        const auto* p = reinterpret_cast<const uint8_t*>(images.data()) + 16 + size_t(i) * rows * cols;
        img.pixels.assign(p, p + size_t(rows) * cols);
        out.images.push_back(std::move(img));
        out.labels.push_back(int(uint8_t(labels[8 + i])));
        if (out.labels.back() >= int(out.classNames.size()))
            return Error { labelsPath + ": label " + std::to_string(out.labels.back()) + " out of range" };
    }
    return out;
}

Result<LabelledImages> readImageFolder(const std::string& dir, int limit)
{
    if (!fs::is_directory(dir))
        return Error { dir + ": not a folder" };
    LabelledImages out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_directory())
            out.classNames.push_back(e.path().filename().string());
    std::sort(out.classNames.begin(), out.classNames.end());
    if (out.classNames.size() < 2)
        return Error { dir + ": needs one sub-folder per class (at least two)" };
    for (size_t c = 0; c < out.classNames.size(); ++c) {
        std::vector<std::string> files;
        for (const auto& e : fs::recursive_directory_iterator(fs::path(dir) / out.classNames[c]))
            if (e.is_regular_file())
                files.push_back(e.path().string());
        std::sort(files.begin(), files.end());
        for (const auto& f : files) {
            auto img = decodeImage(f);
            if (!img)
                return img.error();
            out.images.push_back(std::move(*img));
            out.labels.push_back(int(c));
        }
    }
    if (limit > 0 && out.images.size() > size_t(limit)) {
        out.images.resize(size_t(limit));
        out.labels.resize(size_t(limit));
    }
    return out;
}

} // namespace attnscope
