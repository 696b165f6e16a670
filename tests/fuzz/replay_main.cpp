// Replays a fuzz target over files and directories (seed corpus, committed
// crash reproducers): every input ever found is a regression test forever.
// Built with any compiler; the fuzzing itself needs clang (make fuzz).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<fs::path> inputs;
    if (fs::is_directory(argv[i])) {
      for (const auto& e : fs::directory_iterator(argv[i])) {
        if (e.is_regular_file() && e.path().filename() != "README") inputs.push_back(e.path());
      }
    } else if (fs::exists(argv[i])) {
      inputs.emplace_back(argv[i]);
    }
    for (const auto& p : inputs) {
      std::ifstream f(p, std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++files;
    }
  }
  std::printf("replayed %d inputs\n", files);
  return files > 0 ? 0 : 1;
}
