// Program listings and Graphviz drawings.
#include "ir/listing.h"

#include <charconv>
#include <map>

#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar {

/// The shortest text that reads back as the same float ("0.001", "1e-08").
static std::string floatText(float v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

static std::string joinQuoted(const google::protobuf::RepeatedPtrField<std::string> &v) {
  std::string s;
  for (const auto &x : v)
    s += (s.empty() ? "\"" : ", \"") + x + "\"";
  return "[" + s + "]";
}

std::string attrText(const proto::Attr &a) {
  switch (a.value_case()) {
  case proto::Attr::kI:
    return std::to_string(a.i());
  case proto::Attr::kF:
    return floatText(a.f());
  case proto::Attr::kS:
    return "\"" + a.s() + "\"";
  case proto::Attr::kB:
    return a.b() ? "true" : "false";
  case proto::Attr::kBlock:
    return "block " + std::to_string(a.block());
  case proto::Attr::kInts: {
    std::string s;
    for (int64_t x : a.ints().v())
      s += (s.empty() ? "" : ", ") + std::to_string(x);
    return "[" + s + "]";
  }
  case proto::Attr::kFloats: {
    std::string s;
    for (float x : a.floats().v())
      s += (s.empty() ? "" : ", ") + floatText(x);
    return "[" + s + "]";
  }
  case proto::Attr::kStrings:
    return joinQuoted(a.strings().v());
  default:
    return "?";
  }
}

std::string opLine(const proto::Op &op) {
  std::string outs = llvm::join(allOutputNames(op), ", ");
  std::string ins;
  for (const proto::Slot &s : op.inputs())
    ins += (ins.empty() ? "" : ", ") + s.slot() + ": " +
           llvm::join(s.names().begin(), s.names().end(), ", ");
  std::string line = (outs.empty() ? "" : outs + " = ") + op.type() + "(" + ins + ")";
  if (op.attrs_size()) {
    std::vector<std::string> attrs;
    for (const proto::Attr &a : op.attrs())
      attrs.push_back(a.name() + "=" + attrText(a));
    llvm::sort(attrs);
    line += " {" + llvm::join(attrs, ", ") + "}";
  }
  return line;
}

std::string listing(const proto::Program &prog, bool withVars) {
  std::string out;
  for (const proto::Block &b : prog.blocks()) {
    out += llvm::formatv("block {0} (parent {1})\n", b.idx(), b.parent()).str();
    if (withVars)
      for (const proto::Var &v : b.vars())
        out += "  var " + v.name() + ": " + typeString(v.type()) +
               (v.kind() == proto::SELECTED_ROWS ? " selected_rows" : "") +
               (v.persistable() ? " persistable" : "") + (v.is_parameter() ? " parameter" : "") +
               "\n";
    for (const proto::Op &op : b.ops())
      out += "  " + opLine(op) + "\n";
  }
  return out;
}

llvm::Expected<std::vector<std::pair<std::string, proto::Program>>>
loadProgramsForShow(const std::vector<std::string> &paths) {
  std::vector<std::pair<std::string, proto::Program>> result;
  for (const std::string &path : paths) {
    if (!llvm::sys::fs::is_directory(path)) {
      auto p = loadProgram(path);
      if (!p)
        return p.takeError();
      result.emplace_back(llvm::sys::path::filename(path).str(), std::move(*p));
      continue;
    }
    // A transpiled directory: trainer.pb, then pserver.<i>.pb in endpoint order.
    std::vector<std::string> files;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec; it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      if (name.endswith(".pb") && !name.contains("startup") &&
          (name.startswith("trainer") || name.startswith("pserver")))
        files.push_back(it->path());
    }
    if (ec)
      return makeError("{0}: cannot list: {1}", path, ec.message());
    if (files.empty())
      return makeError("{0}: no trainer.pb or pserver.<i>.pb in this directory", path);
    llvm::sort(files, [](const std::string &a, const std::string &b) {
      // numeric order of pserver indices, trainer first
      auto key = [](llvm::StringRef f) {
        f = llvm::sys::path::filename(f);
        unsigned idx = 0;
        f.drop_front(8).take_while(llvm::isDigit).getAsInteger(10, idx);
        return std::make_pair(f.startswith("pserver"), idx);
      };
      return key(a) < key(b);
    });
    for (const std::string &f : files) {
      auto p = loadProgram(f);
      if (!p)
        return p.takeError();
      result.emplace_back(llvm::sys::path::filename(f).str(), std::move(*p));
    }
  }
  return result;
}

static std::string dotEscape(llvm::StringRef s) {
  std::string out;
  for (char c : s)
    out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out;
}

std::string dotGraph(const std::vector<std::pair<std::string, proto::Program>> &programs) {
  std::string out = "digraph oar {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", "
                    "fontsize=10];\n";
  std::map<std::string, std::string> serverNode; // endpoint -> its listen_and_serv node
  std::vector<std::pair<std::string, const proto::Op *>> distOps;
  for (size_t p = 0; p < programs.size(); ++p) {
    const auto &[name, prog] = programs[p];
    out +=
        llvm::formatv("  subgraph cluster_{0} {{\n    label=\"{1}\";\n", p, dotEscape(name)).str();
    for (const proto::Block &b : prog.blocks()) {
      std::map<std::string, std::string> lastWriter;
      std::string previous;
      for (int i = 0; i < b.ops_size(); ++i) {
        const proto::Op &op = b.ops(i);
        std::string node = llvm::formatv("p{0}b{1}o{2}", p, b.idx(), i).str();
        if (!previous.empty()) // keep program order top-down, also for ops without data edges
          out += "    " + previous + " -> " + node + " [style=invis];\n";
        previous = node;
        std::string label = op.type();
        for (const std::string &o : allOutputNames(op))
          label += "\\n" + dotEscape(o);
        out += "    " + node + " [label=\"" + label + "\"" +
               (op.role() == proto::DIST ? ", style=filled, fillcolor=lightblue" : "") + "];\n";
        for (const std::string &in : allInputNames(op))
          if (lastWriter.count(in))
            out += "    " + lastWriter[in] + " -> " + node + ";\n";
        for (const std::string &o : allOutputNames(op))
          lastWriter[o] = node;
        if (op.type() == "listen_and_serv")
          if (const proto::Attr *ep = findAttr(op, "endpoint"))
            serverNode[ep->s()] = node;
        if (op.type() == "send" || op.type() == "recv")
          distOps.emplace_back(node, &op);
      }
    }
    out += "  }\n";
  }
  // One edge per var sent or received, to or from the pserver owning its endpoint.
  for (const auto &[node, op] : distOps) {
    const proto::Attr *epmap = findAttr(*op, "epmap");
    if (!epmap)
      continue;
    bool isSend = op->type() == "send";
    auto names = isSend ? opInputs(*op, "X") : opOutputs(*op, "Out");
    for (int i = 0; i < epmap->strings().v_size() && i < static_cast<int>(names.size()); ++i) {
      auto it = serverNode.find(epmap->strings().v(i));
      if (it == serverNode.end())
        continue;
      out += isSend ? llvm::formatv("  {0} -> {1} [label=\"{2}\", color=red, constraint=false];\n",
                                    node, it->second, dotEscape(names[i]))
                          .str()
                    : llvm::formatv("  {1} -> {0} [label=\"{2}\", color=blue, constraint=false];\n",
                                    node, it->second, dotEscape(names[i]))
                          .str();
    }
  }
  return out + "}\n";
}

} // namespace oar
