// A tiny JSON writer for the flashcore tool's --json output (one object on one line).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace fcapp {

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

/// A number, or null when it is not finite (JSON has no NaN or infinity).
inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// Builds {"key": value, ...}; values are pre-rendered JSON.
class JsonObject {
 public:
  JsonObject& raw(const std::string& key, const std::string& json) {
    text_ += (text_.empty() ? "" : ", ") + json_string(key) + ": " + json;
    return *this;
  }
  JsonObject& str(const std::string& key, const std::string& v) { return raw(key, json_string(v)); }
  JsonObject& num(const std::string& key, double v) { return raw(key, json_number(v)); }
  JsonObject& integer(const std::string& key, long long v) { return raw(key, std::to_string(v)); }
  JsonObject& boolean(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonObject& null(const std::string& key) { return raw(key, "null"); }
  std::string render() const { return "{" + text_ + "}"; }

 private:
  std::string text_;
};

}  // namespace fcapp
