#include "cli/config_file.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/config_toml.h"
#include "cli/did_you_mean.h"
#include "core/status_macros.h"

namespace tiresias::cli {
namespace {

using config_internal::FlagName;
using config_internal::ParseNumber;
using Kind = ConfigEntry::Kind;

absl::Status EntryError(const ConfigFile& file, std::string_view section,
                        const ConfigEntry& e, std::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(file.path, ":", e.line, ": [", std::string(section), "] ",
                   e.key, ": ", std::string(message)));
}

}  // namespace

std::set<std::string> GivenOptions(const CLI::App& cmd) {
  std::set<std::string> out;
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() > 0 && !opt->get_lnames().empty()) {
      out.insert(opt->get_lnames().front());
    }
  }
  return out;
}

absl::Status ApplyConfig(const ConfigFile& file, std::string_view section,
                         const std::set<std::string>& given, CLI::App* cmd) {
  const std::vector<ConfigEntry>* entries = file.Section(section);
  if (entries == nullptr) return absl::OkStatus();
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd->get_options()) {
    for (const std::string& n : opt->get_lnames()) {
      if (n != "help" && n != "config") names.push_back(n);
    }
  }
  for (const ConfigEntry& e : *entries) {
    const std::string name = FlagName(e.key);
    CLI::Option* opt = name == "help" || name == "config" || name == "help-all"
                           ? nullptr
                           : cmd->get_option_no_throw("--" + name);
    if (opt == nullptr) {
      const std::string near = NearestName(name, names);
      return EntryError(
          file, section, e,
          absl::StrCat(
              "not a flag of `tiresias ", std::string(section), "`",
              near.empty() ? "" : absl::StrCat(" (did you mean ", near, "?)"),
              "; see `tiresias ", std::string(section), " --help`"));
    }
    if (given.contains(opt->get_lnames().front())) continue;
    const bool flag = opt->get_expected_max() == 0;  // add_flag: expected(0)
    if (flag && (e.array || e.kind != Kind::kBool)) {
      return EntryError(file, section, e, "expected true or false");
    }
    if (!flag && e.array && opt->get_expected_max() <= 1) {
      return EntryError(file, section, e,
                        "expected one value, not a list (the flag is given "
                        "once)");
    }
    opt->clear();
    if (e.values.empty()) continue;  // [] : none, the default of a list
    // "" for a flag with no default (--gpus, --name): the default, which
    // the example file writes so.
    if (!e.array && e.values[0].empty() && opt->get_default_str().empty()) {
      continue;
    }
    for (const std::string& v : e.values) opt->add_result(v);
    try {
      opt->run_callback();
    } catch (const CLI::Error& err) {
      return EntryError(
          file, section, e,
          absl::StrCat(absl::StrJoin(e.values, ","), ": ", err.what()));
    }
  }
  return absl::OkStatus();
}

const ConfigEntry* FindFlag(const ConfigFile& file, std::string_view section,
                            std::string_view name) {
  const std::vector<ConfigEntry>* entries = file.Section(section);
  if (entries == nullptr) return nullptr;
  for (const ConfigEntry& e : *entries) {
    if (FlagName(e.key) == FlagName(name)) return &e;
  }
  return nullptr;
}

std::string PlaceInConfig(const ConfigFile& file, std::string_view section,
                          const std::set<std::string>& given,
                          std::string_view message) {
  if (!message.starts_with("--")) return std::string(message);
  std::string_view name = message.substr(2);
  name = name.substr(0, name.find_first_of(" :="));
  if (given.contains(std::string(name))) return std::string(message);
  const ConfigEntry* e = FindFlag(file, section, name);
  if (e == nullptr) return std::string(message);
  return absl::StrCat(file.path, ":", e->line, ": [", std::string(section),
                      "] ", e->key, ": ", std::string(message));
}

void AddConfigFlag(CLI::App* cmd, std::string* path) {
  cmd->add_option(
         "--config", *path,
         absl::StrCat("Read this command's flags from the [", cmd->get_name(),
                      "] section of a TOML file (docs/config.md; "
                      "`tiresias config check FILE`); flags given "
                      "here win"))
      ->envname("TIRESIAS_CONFIG");
}

absl::Status LoadAndCheckConfig(const std::string& path,
                                std::string_view section, CLI::App* cmd,
                                const std::function<absl::Status()>& check) {
  const std::set<std::string> given = GivenOptions(*cmd);
  if (path.empty()) return check();
  ASSIGN_OR_RETURN(ConfigFile file, ReadConfigFile(path));
  return ApplyAndCheckConfig(file, section, given, cmd, check);
}

absl::Status ApplyAndCheckConfig(const ConfigFile& file,
                                 std::string_view section,
                                 const std::set<std::string>& given,
                                 CLI::App* cmd,
                                 const std::function<absl::Status()>& check) {
  RETURN_IF_ERROR(ApplyConfig(file, section, given, cmd));
  if (absl::Status s = check(); !s.ok()) {
    return absl::Status(s.code(), PlaceInConfig(file, section, given,
                                                std::string(s.message())));
  }
  return absl::OkStatus();
}

namespace {

// A TOML value for a flag's default text.
std::string TomlValue(const CLI::Option& opt, const std::string& text) {
  if (opt.get_expected_max() == 0) {
    return text == "1" || text == "true" ? "true" : "false";
  }
  std::string number;
  if (!text.empty() && ParseNumber(text, &number)) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// Help text as comment lines of at most 76 columns.
void AppendComment(std::string_view text, std::string* out) {
  std::string line = "#";
  const std::vector<std::string> words =
      absl::StrSplit(std::string(text), ' ', absl::SkipEmpty());
  for (const std::string& word : words) {
    if (line.size() + 1 + word.size() > 76 && line.size() > 1) {
      absl::StrAppend(out, line, "\n");
      line = "#";
    }
    absl::StrAppend(&line, " ", word);
  }
  absl::StrAppend(out, line, "\n");
}

}  // namespace

std::string ExampleSection(const CLI::App& cmd, std::string_view section) {
  std::string out = absl::StrCat("[", std::string(section), "]\n");
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->get_lnames().empty()) continue;
    const std::string& name = opt->get_lnames().front();
    if (name == "help" || name == "config" || name == "help-all") continue;
    absl::StrAppend(&out, "\n");
    AppendComment(opt->get_description(), &out);
    const std::string def = opt->get_default_str();
    if (opt->get_expected_max() > 1) {
      absl::StrAppend(&out, "# ", name, " = [",
                      def.empty() ? "" : TomlValue(*opt, def), "]\n");
    } else {
      absl::StrAppend(&out, "# ", name, " = ",
                      def.empty() && opt->get_expected_max() != 0
                          ? "\"\""
                          : TomlValue(*opt, def),
                      "\n");
    }
  }
  return out;
}

}  // namespace tiresias::cli
