// Helper of the CLI tests (tests/cli/cli_test.cmake), independent of the tool's own code:
//
//   cli_check json FILE [KEY=VALUE | KEY:TYPE]...
//       FILE must hold exactly one JSON object (a minimal strict parser checks the syntax).
//       KEY=VALUE: the top-level member KEY is a scalar whose text is VALUE (strings unquoted;
//       numbers compared as numbers; true/false/null literally). KEY:TYPE: the member exists and
//       has that type (string, number, bool, null, array, object; "number|null" allows either).
//   cli_check make-npy OUT DESCR FORTRAN SHAPE [DROP_BYTES [VERSION]]
//       writes a .npy file: DESCR e.g. '<f4', FORTRAN True/False, SHAPE e.g. 1,8,2,16 (or "" for
//       a 0-d array); nonzero data; DROP_BYTES bytes cut from the end (a truncated file);
//       VERSION 1 or 2 of the format.
//   cli_check npy-header FILE DESCR SHAPE
//       FILE is a C-order .npy file with that descriptor and shape, and exactly its data size.
//
// Exit status 0 when the check holds; otherwise a message on stderr and exit status 1.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/numeric.hpp"

namespace {

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "cli_check: " << msg << "\n";
  std::exit(1);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) die("cannot open " + path);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

// ---------------------------------------------------------------------------------------------
// Minimal strict JSON parser: records the type and text of each top-level member.
// ---------------------------------------------------------------------------------------------
struct Member {
  std::string type;  // string, number, bool, null, array, object
  std::string text;  // decoded string, number text, true/false/null; empty for containers
};

class Json {
 public:
  explicit Json(const std::string& s) : s_(s) {}

  std::map<std::string, Member> top_object() {
    ws();
    if (peek() != '{') fail("expected '{' at the start");
    std::map<std::string, Member> members;
    ++i_;
    ws();
    if (peek() == '}') {
      ++i_;
    } else {
      for (;;) {
        ws();
        const std::string key = string();
        ws();
        expect(':');
        Member m = value();
        if (members.count(key)) fail("duplicate key '" + key + "'");
        members[key] = m;
        ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        break;
      }
    }
    ws();
    if (i_ != s_.size()) fail("text after the object (stdout must hold exactly one JSON object)");
    return members;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    die("invalid JSON at offset " + std::to_string(i_) + ": " + what);
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = peek();
      ++i_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          for (int k = 0; k < 4; ++k)
            if (!std::isxdigit(static_cast<unsigned char>(s_[i_ + k]))) fail("bad \\u escape");
          const long cp = std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16);
          i_ += 4;
          out += cp < 0x80 ? static_cast<char>(cp) : '?';
          break;
        }
        default: fail("bad escape");
      }
    }
    return out;
  }
  std::string number() {
    const std::size_t start = i_;
    if (peek() == '-') ++i_;
    if (peek() == '0') {
      ++i_;
    } else if (std::isdigit(static_cast<unsigned char>(peek()))) {
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++i_;
    } else {
      fail("bad number");
    }
    if (peek() == '.') {
      ++i_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("bad fraction");
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("bad exponent");
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++i_;
    }
    return s_.substr(start, i_ - start);
  }
  bool literal(const char* word) {
    const std::size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) == 0) {
      i_ += n;
      return true;
    }
    return false;
  }
  Member value() {
    ws();
    const char c = peek();
    if (c == '"') return {"string", string()};
    if (c == '{') {
      ++i_;
      ws();
      if (peek() == '}') {
        ++i_;
        return {"object", ""};
      }
      for (;;) {
        ws();
        string();
        ws();
        expect(':');
        value();
        ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return {"object", ""};
      }
    }
    if (c == '[') {
      ++i_;
      ws();
      if (peek() == ']') {
        ++i_;
        return {"array", ""};
      }
      for (;;) {
        value();
        ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return {"array", ""};
      }
    }
    if (literal("true")) return {"bool", "true"};
    if (literal("false")) return {"bool", "false"};
    if (literal("null")) return {"null", "null"};
    return {"number", number()};
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

int cmd_json(int argc, char** argv) {
  if (argc < 3) die("usage: json FILE [KEY=VALUE|KEY:TYPE]...");
  const std::string text = read_file(argv[2]);
  const auto members = Json(text).top_object();
  int failures = 0;
  for (int a = 3; a < argc; ++a) {
    const std::string spec = argv[a];
    const auto eq = spec.find('='), colon = spec.find(':');
    const bool is_value = eq != std::string::npos && (colon == std::string::npos || eq < colon);
    const std::string key = spec.substr(0, is_value ? eq : colon);
    const auto it = members.find(key);
    if (it == members.end()) {
      std::cerr << "cli_check: missing member '" << key << "'\n";
      ++failures;
      continue;
    }
    const Member& m = it->second;
    if (is_value) {
      const std::string want = spec.substr(eq + 1);
      bool ok = m.text == want;
      if (!ok && m.type == "number") ok = std::strtod(m.text.c_str(), nullptr) == std::strtod(want.c_str(), nullptr);
      if (!ok) {
        std::cerr << "cli_check: member '" << key << "' is " << m.type << " '" << m.text << "', expected '" << want
                  << "'\n";
        ++failures;
      }
    } else {
      const std::string types = "|" + spec.substr(colon + 1) + "|";
      if (types.find("|" + m.type + "|") == std::string::npos) {
        std::cerr << "cli_check: member '" << key << "' is a " << m.type << ", expected " << spec.substr(colon + 1)
                  << "\n";
        ++failures;
      }
    }
  }
  if (failures) return 1;
  std::cout << "cli_check: JSON object with " << members.size() << " members; all " << (argc - 3)
            << " checks hold\n";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// .npy files
// ---------------------------------------------------------------------------------------------
std::vector<long long> parse_shape(const std::string& s) {
  std::vector<long long> dims;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');)
    if (!part.empty()) dims.push_back(std::atoll(part.c_str()));
  return dims;
}

std::string shape_text(const std::vector<long long>& dims) {
  std::string t = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) t += (i ? ", " : "") + std::to_string(dims[i]);
  if (dims.size() == 1) t += ",";
  return t + ")";
}

int itemsize(const std::string& descr) { return descr.size() >= 3 ? std::atoi(descr.c_str() + 2) : 0; }

int cmd_make_npy(int argc, char** argv) {
  if (argc < 6) die("usage: make-npy OUT DESCR FORTRAN SHAPE [DROP_BYTES [VERSION]]");
  const std::string out = argv[2], descr = argv[3], fortran = argv[4];
  const std::vector<long long> dims = parse_shape(argv[5]);
  const long long drop = argc > 6 ? std::atoll(argv[6]) : 0;
  const int version = argc > 7 ? std::atoi(argv[7]) : 1;
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape_text(dims) + ", }";
  const std::size_t prefix = 6 + 2 + (version == 1 ? 2 : 4);
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string file = "\x93NUMPY";
  file += static_cast<char>(version);
  file += '\0';
  const std::size_t len = header.size();
  file += static_cast<char>(len & 0xff);
  file += static_cast<char>((len >> 8) & 0xff);
  if (version != 1) {
    file += static_cast<char>((len >> 16) & 0xff);
    file += static_cast<char>((len >> 24) & 0xff);
  }
  file += header;
  long long n = 1;
  for (long long d : dims) n *= d;
  const int size = itemsize(descr);
  for (long long i = 0; i < n; ++i) {
    const float x = static_cast<float>((i * 37) % 17 - 8) / 8.0f + 0.0625f;  // never zero
    unsigned char bytes[8] = {0};
    if (descr.substr(1) == "f4") {
      std::memcpy(bytes, &x, 4);
    } else if (descr.substr(1) == "f2") {
      const std::uint16_t h = flashcore::numeric::float_to_half(x);
      std::memcpy(bytes, &h, 2);
    } else if (descr.substr(1) == "u2" || descr.substr(1) == "i2") {
      const std::uint16_t h = flashcore::numeric::float_to_bf16(x);
      std::memcpy(bytes, &h, 2);
    } else if (descr.substr(1) == "u1" || descr.substr(1) == "i1") {
      bytes[0] = flashcore::numeric::float_to_e4m3(x);  // fp8 e4m3 bytes
    }
    file.append(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(size > 8 ? 8 : size));
  }
  if (drop > 0) file.resize(file.size() > static_cast<std::size_t>(drop) ? file.size() - drop : 0);
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f.write(file.data(), static_cast<std::streamsize>(file.size()));
  if (!f) die("cannot write " + out);
  return 0;
}

int cmd_npy_header(int argc, char** argv) {
  if (argc != 5) die("usage: npy-header FILE DESCR SHAPE");
  const std::string path = argv[2], descr = argv[3];
  const std::vector<long long> dims = parse_shape(argv[4]);
  const std::string s = read_file(path);
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0) die(path + ": no .npy magic");
  if (s[6] != 1 || s[7] != 0) die(path + ": not format version 1.0");
  const std::size_t hlen = static_cast<unsigned char>(s[8]) | (static_cast<unsigned char>(s[9]) << 8);
  if ((10 + hlen) % 64 != 0) die(path + ": data does not start at a multiple of 64 bytes");
  if (s.size() < 10 + hlen) die(path + ": truncated header");
  const std::string header = s.substr(10, hlen);
  if (header.back() != '\n') die(path + ": header does not end with a newline");
  const std::string want = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text(dims) + ", }";
  if (header.compare(0, want.size(), want) != 0) die(path + ": header '" + header + "' is not '" + want + "...'");
  long long n = 1;
  for (long long d : dims) n *= d;
  const std::size_t data = s.size() - 10 - hlen;
  if (data != static_cast<std::size_t>(n * itemsize(descr)))
    die(path + ": " + std::to_string(data) + " data bytes, expected " + std::to_string(n * itemsize(descr)));
  std::cout << "cli_check: " << path << " is " << descr << " " << shape_text(dims) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) die("usage: cli_check json|make-npy|npy-header ...");
  const std::string cmd = argv[1];
  if (cmd == "json") return cmd_json(argc, argv);
  if (cmd == "make-npy") return cmd_make_npy(argc, argv);
  if (cmd == "npy-header") return cmd_npy_header(argc, argv);
  die("unknown command " + cmd);
}
