// Reads the layers cmake/layers.cmake declares and the includes of their files (see the header).
#include "test/architecture/layering_check.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

namespace fs = std::filesystem;

namespace oar::test {

llvm::Expected<std::vector<Layer>> readLayers(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: cannot be read",
                                   path.c_str());
  std::vector<Layer> layers;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    llvm::StringRef text = llvm::StringRef(line).trim();
    if (text.empty() || text.startswith("#"))
      continue;
    llvm::SmallVector<llvm::StringRef, 3> fields;
    text.split(fields, '|');
    if (fields.size() != 3 || fields[0].trim().empty() || fields[1].trim().empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "%s:%d: expected name|folders|dependencies, got \"%s\"",
                                     path.c_str(), number, line.c_str());
    Layer layer{fields[0].trim().str(), {}, {}};
    llvm::SmallVector<llvm::StringRef, 8> words;
    fields[1].split(words, ' ', -1, false);
    for (llvm::StringRef w : words)
      layer.dirs.push_back(w.str());
    words.clear();
    fields[2].split(words, ' ', -1, false);
    for (llvm::StringRef w : words)
      layer.deps.push_back(w.str());
    layers.push_back(std::move(layer));
  }
  return layers;
}

namespace {

/// The declared cycles, each as "a -> b -> a" (depth-first search over the declarations).
void findCycles(const std::map<std::string, const Layer *> &byName,
                std::vector<std::string> &problems) {
  std::map<std::string, int> state; // 0 unseen, 1 on the path, 2 done
  std::vector<std::string> path;
  std::function<void(const std::string &)> visit = [&](const std::string &name) {
    state[name] = 1;
    path.push_back(name);
    for (const std::string &dep : byName.at(name)->deps) {
      if (!byName.count(dep))
        continue;
      if (state[dep] == 1) {
        auto from = std::find(path.begin(), path.end(), dep);
        std::string cycle;
        for (auto it = from; it != path.end(); ++it)
          cycle += *it + " -> ";
        problems.push_back("layers form a cycle: " + cycle + dep);
      } else if (state[dep] == 0) {
        visit(dep);
      }
    }
    path.pop_back();
    state[name] = 2;
  };
  for (const auto &[name, layer] : byName)
    if (state[name] == 0)
      visit(name);
}

/// Every layer `name` builds on, directly or through others.
std::set<std::string> reachable(const std::map<std::string, const Layer *> &byName,
                                const std::string &name) {
  std::set<std::string> seen;
  std::vector<std::string> todo{name};
  while (!todo.empty()) {
    std::string next = todo.back();
    todo.pop_back();
    auto it = byName.find(next);
    if (it == byName.end())
      continue;
    for (const std::string &dep : it->second->deps)
      if (seen.insert(dep).second)
        todo.push_back(dep);
  }
  return seen;
}

bool isSourceFile(const fs::path &p) {
  std::string ext = p.extension().string();
  return ext == ".h" || ext == ".cc" || ext == ".cu" || ext == ".cuh" || ext == ".proto";
}

} // namespace

std::vector<std::string> layeringProblems(const std::vector<Layer> &layers,
                                          const std::string &sourceRoot) {
  std::vector<std::string> problems;
  std::map<std::string, const Layer *> byName;
  std::map<std::string, std::string> layerOfDir;
  for (const Layer &layer : layers) {
    if (!byName.emplace(layer.name, &layer).second)
      problems.push_back("layer " + layer.name + " is declared twice");
    for (const std::string &dir : layer.dirs)
      if (!layerOfDir.emplace(dir, layer.name).second)
        problems.push_back("folder " + dir + " is in two layers");
  }
  for (const Layer &layer : layers)
    for (const std::string &dep : layer.deps)
      if (!byName.count(dep))
        problems.push_back("layer " + layer.name + " builds on " + dep + ", which is no layer");
  findCycles(byName, problems);

  // Folders below a layer's top folder that hold sources but belong to no layer.
  std::set<std::string> tops;
  for (const auto &[dir, layer] : layerOfDir)
    tops.insert(dir.substr(0, dir.find('/')));
  for (const std::string &top : tops) {
    fs::path root = fs::path(sourceRoot) / top;
    if (!fs::is_directory(root))
      continue;
    std::set<std::string> reported;
    for (const auto &entry : fs::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file() || !isSourceFile(entry.path()))
        continue;
      std::string dir = fs::relative(entry.path().parent_path(), sourceRoot).generic_string();
      if (!layerOfDir.count(dir) && reported.insert(dir).second)
        problems.push_back(dir + " holds sources but is in no layer (cmake/layers.cmake)");
    }
  }

  // Each include of each layer's files.
  static const std::regex includeLine(R"re(^\s*(?:#\s*include|import)\s+"([^"]+)")re");
  for (const Layer &layer : layers) {
    std::set<std::string> allowed = reachable(byName, layer.name);
    for (const std::string &dir : layer.dirs) {
      fs::path folder = fs::path(sourceRoot) / dir;
      if (!fs::is_directory(folder))
        continue;
      std::vector<fs::path> files;
      for (const auto &entry : fs::directory_iterator(folder))
        if (entry.is_regular_file() && isSourceFile(entry.path()))
          files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const fs::path &file : files) {
        std::ifstream in(file);
        std::string line;
        std::string shown = dir + "/" + file.filename().string();
        for (int number = 1; std::getline(in, line); ++number) {
          std::smatch m;
          if (!std::regex_search(line, m, includeLine))
            continue;
          std::string target = m[1];
          std::string targetDir = fs::path(target).parent_path().generic_string();
          auto owner = layerOfDir.find(targetDir);
          if (owner == layerOfDir.end()) {
            // A package's header (llvm/, google/, zmq.hpp) is not oar's; a folder of oar's that
            // no layer holds (tools/, test/) is above every layer.
            if (!targetDir.empty() && fs::is_directory(fs::path(sourceRoot) / targetDir))
              problems.push_back(llvm::formatv("{0}:{1}: layer {2} includes \"{3}\", which no "
                                               "layer holds",
                                               shown, number, layer.name, target));
            continue;
          }
          if (owner->second != layer.name && !allowed.count(owner->second))
            problems.push_back(llvm::formatv("{0}:{1}: layer {2} includes \"{3}\" of layer {4}, "
                                             "which it does not build on (cmake/layers.cmake)",
                                             shown, number, layer.name, target, owner->second));
        }
      }
    }
  }
  return problems;
}

} // namespace oar::test
