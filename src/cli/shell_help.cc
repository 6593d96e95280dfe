#include "cli/shell_help.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "report/files.h"

namespace tiresias::cli {
namespace {

// What a user may type: subcommands and options not hidden (CLI11 hides
// those whose group is empty).
std::vector<const CLI::App*> Subcommands(const CLI::App& app) {
  std::vector<const CLI::App*> subs;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->get_group().empty()) subs.push_back(sub);
  }
  return subs;
}

std::vector<const CLI::Option*> Options(const CLI::App& app) {
  std::vector<const CLI::Option*> options;
  for (const CLI::Option* option : app.get_options()) {
    if (!option->get_group().empty()) options.push_back(option);
  }
  return options;
}

std::vector<std::string> Names(const CLI::Option& option) {
  std::vector<std::string> names;
  for (const std::string& s : option.get_snames()) names.push_back("-" + s);
  for (const std::string& l : option.get_lnames()) names.push_back("--" + l);
  return names;
}

// A flag expects no item (its type size is 1 all the same).
bool TakesValue(const CLI::Option& option) {
  return option.get_items_expected_max() > 0;
}

// The fixed set of values an option takes, from its type name as CLI11's
// IsMember writes it ("TEXT:{fifo,las}"); empty when the values are free.
std::vector<std::string> Choices(const CLI::Option& option) {
  const std::string type = option.get_type_name();
  const size_t open = type.find('{');
  const size_t close = type.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::vector<std::string> choices;
  for (absl::string_view choice : absl::StrSplit(
           absl::string_view(type).substr(open + 1, close - open - 1), ',')) {
    if (!choice.empty()) choices.emplace_back(choice);
  }
  return choices;
}

// "jobs" or "nodes" for an option whose values are the cluster's job ids
// or node names (its type name kJobType or kNodeType), else "".
std::string DynamicKind(const CLI::Option& option) {
  const std::string type = option.get_type_name();
  if (type.rfind(kJobType, 0) == 0) return "jobs";
  if (type.rfind(kNodeType, 0) == 0) return "nodes";
  return "";
}

// Words of a bash single-quoted string: ' cannot appear inside one.
std::string Quote(const std::string& text) {
  return "'" + absl::StrReplaceAll(text, {{"'", "'\\''"}}) + "'";
}

struct CompletionData {
  // key "kind|path" (path: the subcommand names after "tiresias", space
  // separated; "" for the top) -> the words.
  std::map<std::string, std::string> entries;
};

void Collect(const CLI::App& app, const std::string& path,
             CompletionData* data) {
  std::vector<std::string> subs, opts, vals;
  for (const CLI::App* sub : Subcommands(app)) {
    subs.push_back(sub->get_name());
    for (const std::string& alias : sub->get_aliases()) subs.push_back(alias);
  }
  bool positional = false;
  for (const CLI::Option* option : Options(app)) {
    const std::string dynamic = DynamicKind(*option);
    if (!option->nonpositional()) {
      positional = true;
      if (!dynamic.empty()) data->entries["posdyn|" + path] = dynamic;
      continue;
    }
    for (const std::string& name : Names(*option)) {
      opts.push_back(name);
      if (TakesValue(*option)) vals.push_back(name);
      if (!dynamic.empty()) {
        data->entries[absl::StrCat("dyn|", path, path.empty() ? "" : " ",
                                   name)] = dynamic;
      }
      const std::vector<std::string> choices = Choices(*option);
      if (!choices.empty()) {
        data->entries[absl::StrCat("choice|", path, path.empty() ? "" : " ",
                                   name)] = absl::StrJoin(choices, " ");
      }
    }
  }
  if (!subs.empty()) data->entries["subs|" + path] = absl::StrJoin(subs, " ");
  if (!opts.empty()) data->entries["opts|" + path] = absl::StrJoin(opts, " ");
  if (!vals.empty()) data->entries["vals|" + path] = absl::StrJoin(vals, " ");
  if (positional) data->entries["pos|" + path] = "1";
  for (const CLI::App* sub : Subcommands(app)) {
    Collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(),
            data);
  }
}

// The completion function. The words before the cursor are walked from the
// left: subcommand names descend, an option that takes a value skips the
// next word (bash splits "--policy=fifo" at '=' into three words), and a bare
// "--" starts a job's command. At the cursor: a value's choices (or files),
// the command's options after "-", else its subcommands (and files where it
// takes positionals).
constexpr char kBashFunction[] = R"bash(
_tiresias() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local path="" word i skip=0 opt=""
  COMPREPLY=()
  if [[ $cur == "=" ]]; then cur=""; prev=${COMP_WORDS[COMP_CWORD-1]}; skip=2; fi
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == "=" ]]; then skip=1; continue; fi
    if ((skip == 1)); then skip=0; continue; fi
    if [[ $word == "--" ]]; then
      if ((i == COMP_CWORD - 1)); then
        COMPREPLY=($(compgen -c -- "$cur"))
      else
        COMPREPLY=($(compgen -f -- "$cur"))
      fi
      return 0
    fi
    if [[ $word == -* ]]; then
      if [[ " $(_tiresias_words vals "$path") " == *" $word "* ]]; then
        skip=1
        opt=$word
      fi
      continue
    fi
    if [[ " $(_tiresias_words subs "$path") " == *" $word "* ]]; then
      path=${path:+$path }$word
    fi
  done
  if ((skip == 2)); then opt=$prev; skip=1; fi
  if [[ $prev == "=" && COMP_CWORD -ge 2 ]]; then opt=${COMP_WORDS[COMP_CWORD-2]}; skip=1; fi
  if ((skip == 1)); then
    local choices dynamic
    choices=$(_tiresias_words choice "${path:+$path }$opt")
    dynamic=$(_tiresias_words dyn "${path:+$path }$opt")
    if [[ -n $dynamic ]]; then
      _tiresias_offer "$dynamic"
    elif [[ -n $choices ]]; then
      COMPREPLY=($(compgen -W "$choices" -- "$cur"))
    else
      COMPREPLY=($(compgen -f -- "$cur"))
    fi
    return 0
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_tiresias_words opts "$path")" -- "$cur"))
    return 0
  fi
  local subs dynamic
  subs=$(_tiresias_words subs "$path")
  dynamic=$(_tiresias_words posdyn "$path")
  COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  if [[ -n $dynamic ]]; then
    _tiresias_offer "$dynamic"
  elif [[ -z $subs || -n $(_tiresias_words pos "$path") ]]; then
    COMPREPLY+=($(compgen -f -- "$cur"))
  fi
  return 0
}
# Adds to COMPREPLY the master's job ids or node names that start with
# $cur, asked of the command being completed (of the --master typed, if
# any; nothing, quietly, when it does not answer within its deadline).
# Read line by line, never through compgen -W, which would expand what
# the master says (a node named "x<(cmd)" would run cmd).
_tiresias_offer() {
  local i w master=()
  for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
    if [[ ${COMP_WORDS[i]} == --master ]]; then
      w=${COMP_WORDS[i+1]}
      [[ $w == "=" ]] && w=${COMP_WORDS[i+2]}
      master=(--master "$w")
    fi
  done
  while IFS= read -r w; do
    [[ $w == "$cur"* ]] && COMPREPLY+=("$w")
  done < <("${COMP_WORDS[0]}" __complete "${master[@]}" "$1" 2>/dev/null)
}
complete -o filenames -F _tiresias tiresias
)bash";

// roff text: a backslash is written \e, a leading '.' or '\'' would be read
// as a request, and '-' is a hyphen unless written \-.
std::string Roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    line_start = c == '\n';
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  return out;
}

std::string OptionSynopsis(const CLI::Option& option) {
  std::string names;
  if (option.nonpositional()) {
    for (const std::string& name : Names(option)) {
      if (!names.empty()) names += ", ";
      names += "\\fB" + Roff(name) + "\\fR";
    }
  } else {
    names = "\\fI" + Roff(option.get_name()) + "\\fR";
  }
  if (option.nonpositional() && TakesValue(option)) {
    names += " \\fI" + Roff(option.get_type_name()) + "\\fR";
  }
  return names;
}

void Page(const CLI::App& app, const std::string& path,
          const std::string& version, std::vector<ManPage>* pages) {
  const std::string command = path.empty() ? "tiresias" : "tiresias " + path;
  const std::string title = absl::StrReplaceAll(command, {{" ", "-"}});
  std::string t;
  absl::StrAppend(&t, ".\\\" Generated by `tiresias man` from the command's "
                      "own definition; do not edit.\n");
  absl::StrAppend(&t, ".TH ", absl::AsciiStrToUpper(title), " 1 \"\" \"tiresias ",
                  version, "\" \"Tiresias Manual\"\n");
  // Ragged right: option values such as a list of fields have no spaces
  // to stretch, and justifying around them only earns groff's warnings.
  absl::StrAppend(&t, ".ad l\n");
  const std::string description = app.get_description();
  // NAME holds one line: the description's first sentence.
  std::string summary = description.substr(0, description.find('\n'));
  summary = summary.substr(0, summary.find(". "));
  if (!summary.empty() && summary.back() == '.') summary.pop_back();
  absl::StrAppend(&t, ".SH NAME\n", Roff(title), " \\- ", Roff(summary), "\n");

  const std::vector<const CLI::App*> subs = Subcommands(app);
  const std::vector<const CLI::Option*> options = Options(app);
  absl::StrAppend(&t, ".SH SYNOPSIS\n.B ", Roff(command), "\n");
  std::string args;
  if (!options.empty()) args += "[\\fIOPTIONS\\fR]";
  for (const CLI::Option* option : options) {
    if (option->nonpositional()) continue;
    const bool required = option->get_required();
    absl::StrAppend(&args, " ", required ? "" : "[", "\\fI",
                    Roff(option->get_name()), "\\fR",
                    option->get_items_expected_max() > 1 ? "..." : "",
                    required ? "" : "]");
  }
  if (!subs.empty()) absl::StrAppend(&args, " \\fICOMMAND\\fR");
  if (!args.empty()) absl::StrAppend(&t, absl::StripLeadingAsciiWhitespace(args), "\n");

  absl::StrAppend(&t, ".SH DESCRIPTION\n");
  for (absl::string_view paragraph : absl::StrSplit(description, "\n\n")) {
    absl::StrAppend(&t, ".PP\n", Roff(std::string(paragraph)), "\n");
  }
  if (!app.get_footer().empty()) {
    absl::StrAppend(&t, ".PP\n", Roff(app.get_footer()), "\n");
  }

  if (!subs.empty()) {
    absl::StrAppend(&t, ".SH COMMANDS\n");
    for (const CLI::App* sub : subs) {
      const std::string sub_path =
          path.empty() ? sub->get_name() : path + " " + sub->get_name();
      const std::string sub_description = sub->get_description();
      absl::StrAppend(&t, ".TP\n.B ", Roff(sub->get_name()), "\n",
                      Roff(sub_description.substr(0, sub_description.find('\n'))),
                      " See \\fB", Roff(absl::StrReplaceAll(
                                       "tiresias " + sub_path, {{" ", "-"}})),
                      "\\fR(1).\n");
    }
  }
  if (!options.empty()) {
    absl::StrAppend(&t, ".SH OPTIONS\n");
    for (const CLI::Option* option : options) {
      absl::StrAppend(&t, ".TP\n", OptionSynopsis(*option), "\n");
      std::string text = option->get_description();
      if (text.empty()) text = "(no description)";
      if (option->get_required()) absl::StrAppend(&text, " Required.");
      if (!option->get_default_str().empty() && TakesValue(*option)) {
        absl::StrAppend(&text, " Default: ", option->get_default_str(), ".");
      }
      absl::StrAppend(&t, Roff(text), "\n");
    }
  }
  if (path.empty()) {
    absl::StrAppend(
        &t, ".SH EXIT STATUS\n",
        Roff("0 on success; 1 when the command failed (one line on standard "
             "error says why: the file, the field, the master's answer); 2 "
             "for a usage error (an unknown command or option, a bad value). "
             "`tiresias submit --wait` and `tiresias logs -f` exit as the job "
             "did: its exit code, 128 + N when signal N ended it, 125 when it "
             "was cancelled, 124 when it ran past its --time limit."),
        "\n.SH ENVIRONMENT\n");
    const std::pair<const char*, const char*> kEnvironment[] = {
        {"TIRESIAS_MASTER", "The master's address, HOST:PORT, for the client "
                            "commands (--master overrides it)."},
        {"TIRESIAS_TOKEN", "A bearer token for a master that authenticates "
                           "callers."},
        {"TIRESIAS_TOKEN_FILE", "A file holding that token."},
        {"TIRESIAS_CA", "The CA certificate that signed the master's; unset "
                        "for a master started with --insecure."},
        {"TIRESIAS_CERT, TIRESIAS_KEY", "A client certificate and its key, "
                                        "where the master asks for one."},
        {"TIRESIAS_MASTER_NAME", "The name the master's certificate must "
                                 "carry, when it is not the address's host."},
        {"TIRESIAS_CONTROL_PERSIST",
         "Seconds the control process that a loop of commands starts (one "
         "connection to the master, shared) stays without a call; default "
         "10, 0 turns it off."},
        {"TIRESIAS_CONTROL_DIR",
         "Where its socket lives (default $XDG_RUNTIME_DIR/tiresias, else "
         "/tmp/tiresias-UID); must be a folder of yours closed to others."},
        {"TIRESIAS_GRPC_LOG", "1 shows gRPC's own log lines."},
    };
    for (const auto& [name, text] : kEnvironment) {
      absl::StrAppend(&t, ".TP\n.B ", Roff(name), "\n", Roff(text), "\n");
    }
  }
  std::vector<std::string> see_also;
  if (!path.empty()) {
    const size_t space = path.rfind(' ');
    see_also.push_back(space == std::string::npos
                           ? "tiresias"
                           : "tiresias-" + absl::StrReplaceAll(
                                               path.substr(0, space),
                                               {{" ", "-"}}));
  }
  for (const CLI::App* sub : subs) {
    see_also.push_back(title + "-" + sub->get_name());
  }
  if (!see_also.empty()) {
    absl::StrAppend(&t, ".SH SEE ALSO\n");
    for (size_t i = 0; i < see_also.size(); ++i) {
      absl::StrAppend(&t, "\\fB", Roff(see_also[i]), "\\fR(1)",
                      i + 1 < see_also.size() ? ",\n" : "\n");
    }
  }
  pages->push_back({title + ".1", std::move(t)});
  for (const CLI::App* sub : subs) {
    Page(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(),
         version, pages);
  }
}

}  // namespace

CLI::Validator ChoicesHint(const std::vector<std::string>& choices) {
  return CLI::Validator(absl::StrCat("{", absl::StrJoin(choices, ","), "}"));
}

std::string BashCompletion(const CLI::App& root) {
  CompletionData data;
  Collect(root, "", &data);
  std::string script =
      "# bash completion for tiresias, generated by `tiresias completion "
      "bash`\n# from the command's own definition. Load it with\n#   source "
      "<(tiresias completion bash)\n# or save it as "
      "~/.local/share/bash-completion/completions/tiresias.\n";
  absl::StrAppend(&script, "_tiresias_words() {\n  case \"$1|$2\" in\n");
  for (const auto& [key, words] : data.entries) {
    absl::StrAppend(&script, "    ", Quote(key), ") echo ", Quote(words),
                    " ;;\n");
  }
  absl::StrAppend(&script, "  esac\n}\n", kBashFunction);
  return script;
}

std::string ZshCompletion(const CLI::App& root) {
  return absl::StrCat(
      "# zsh completion for tiresias, generated by `tiresias completion zsh`.\n"
      "# Load it with: source <(tiresias completion zsh)\n"
      "autoload -U +X compinit && compinit\n"
      "autoload -U +X bashcompinit && bashcompinit\n",
      BashCompletion(root));
}

std::vector<ManPage> ManPages(const CLI::App& root,
                              const std::string& version) {
  std::vector<ManPage> pages;
  Page(root, "", version, &pages);
  return pages;
}

void AddShellHelpCommands(CLI::App& root, const std::string& version,
                          int* exit_code) {
  CLI::App* completion = root.add_subcommand(
      "completion",
      "Print a shell completion script for tiresias (bash or zsh).\n\n"
      "Load it in the current shell with `source <(tiresias completion "
      "bash)`, or keep it: `tiresias completion bash > "
      "~/.local/share/bash-completion/completions/tiresias`.");
  auto shell = std::make_shared<std::string>();
  completion->add_option("shell", *shell, "The shell: bash or zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  completion->callback([&root, shell, exit_code] {
    const std::string script =
        *shell == "zsh" ? ZshCompletion(root) : BashCompletion(root);
    std::fputs(script.c_str(), stdout);
    *exit_code = 0;
  });

  CLI::App* man = root.add_subcommand(
      "man",
      "Print the manual page of tiresias or of one of its commands, or write "
      "them all.\n\n"
      "`tiresias man submit | man -l -` reads the page of `tiresias "
      "submit`; `tiresias man --dir DIR` writes every page (tiresias.1, "
      "tiresias-submit.1, ...) into DIR/man1, for MANPATH=DIR.");
  auto words = std::make_shared<std::vector<std::string>>();
  auto dir = std::make_shared<std::string>();
  man->add_option("command", *words,
                  "The command whose page to print (`admin token`); none: "
                  "tiresias(1)");
  man->add_option("--dir", *dir,
                  "Write every page into DIR/man1 instead of printing one");
  man->callback([&root, version, words, dir, exit_code] {
    const std::vector<ManPage> pages = ManPages(root, version);
    if (!dir->empty()) {
      if (!words->empty()) {
        std::fprintf(stderr,
                     "tiresias: man: --dir writes every page; give no "
                     "command with it\n");
        *exit_code = 2;
        return;
      }
      const std::filesystem::path folder =
          std::filesystem::path(*dir) / "man1";
      std::error_code error;
      std::filesystem::create_directories(folder, error);
      if (error) {
        std::fprintf(stderr, "tiresias: man: cannot make %s: %s\n",
                     folder.c_str(), error.message().c_str());
        *exit_code = 1;
        return;
      }
      // Each page through a temporary file and a rename: `man` reading
      // the folder meanwhile never sees half a page.
      for (const ManPage& page : pages) {
        absl::Status written =
            WriteFileAtomically((folder / page.file).string(), page.text);
        if (!written.ok()) {
          std::fprintf(stderr, "tiresias: man: %s\n",
                       std::string(written.message()).c_str());
          *exit_code = 1;
          return;
        }
      }
      std::printf("wrote %zu pages into %s\n", pages.size(), folder.c_str());
      *exit_code = 0;
      return;
    }
    const std::string file =
        absl::StrCat("tiresias", words->empty() ? "" : "-",
                     absl::StrJoin(*words, "-"), ".1");
    for (const ManPage& page : pages) {
      if (page.file == file) {
        std::fputs(page.text.c_str(), stdout);
        *exit_code = 0;
        return;
      }
    }
    std::fprintf(stderr,
                 "tiresias: man: no command \"%s\"; `tiresias --help` lists "
                 "them\n",
                 absl::StrJoin(*words, " ").c_str());
    *exit_code = 2;
  });
}

}  // namespace tiresias::cli
