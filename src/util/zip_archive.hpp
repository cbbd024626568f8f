#pragma once
// Read-only access to a zip archive (libzip): PyTorch's .pth files since 1.6 are
// zip archives of a pickle and one entry per storage.
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

struct zip;

namespace trainer {

class ZipArchive {
 public:
  explicit ZipArchive(const std::string& path);  // UserError when not a readable zip
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  std::string read(const std::string& name) const;  // UserError naming the entry
  const std::string& path() const { return path_; }

 private:
  struct Closer {
    void operator()(zip* z) const;
  };
  std::string path_;
  std::unique_ptr<zip, Closer> zip_;
};

}  // namespace trainer
