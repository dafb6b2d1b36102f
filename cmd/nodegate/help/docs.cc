#include "cmd/nodegate/help/docs.h"

#include <functional>
#include <regex>
#include <sstream>

namespace nodegate::help {
namespace {

// Choices: the set a validator admits, from CLI11's type name ("TEXT:{json,text}" or, for a
// transformer, "TEXT:value in {text->0,json->1} OR {0,1}"): the first set's keys.
std::vector<std::string> Choices(const std::string& type_name) {
  std::vector<std::string> choices;
  const size_t open = type_name.find('{');
  const size_t close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) {
    return choices;
  }
  std::stringstream items(type_name.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(items, item, ',')) {
    item = item.substr(0, item.find("->"));
    if (!item.empty()) {
      choices.push_back(item);
    }
  }
  return choices;
}

// ValueName: the type name without its validators' descriptions ("TEXT:{json,text}" -> TEXT).
std::string ValueName(const std::string& type_name) {
  return type_name.substr(0, type_name.find(':'));
}

FlagDoc DescribeFlag(const CLI::Option& opt) {
  FlagDoc f;
  f.positional = opt.get_positional() && opt.get_snames().empty() && opt.get_lnames().empty();
  if (f.positional) {
    f.names.push_back(opt.get_name(true, false));
  }
  for (const auto& s : opt.get_snames()) f.names.push_back("-" + s);
  for (const auto& l : opt.get_lnames()) f.names.push_back("--" + l);
  if (opt.get_type_size() != 0) {
    f.value = ValueName(opt.get_type_name());
    f.choices = Choices(opt.get_type_name());
  }
  f.help = opt.get_description();
  f.default_value = opt.get_default_str();
  f.required = opt.get_required();
  return f;
}

// Roff: text safe in a man page: backslashes and hyphens escaped, no line starting a request.
std::string Roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else if (c == '\n') {
      out += "\n.br\n";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) {
    out = "\\&" + out;
  }
  return out;
}

void ManCommand(std::ostringstream& out, const CommandDoc& c) {
  out << ".SS " << Roff(c.path) << "\n" << Roff(c.description) << "\n";
  for (const FlagDoc& f : c.flags) {
    out << ".TP\n";
    std::string tag;
    for (const std::string& name : f.names) {
      tag += (tag.empty() ? "" : ", ") +
             (f.positional ? "\\fI" + Roff(name) + "\\fR" : "\\fB" + Roff(name) + "\\fR");
    }
    if (!f.value.empty() && !f.positional) {
      tag += " \\fI" + Roff(f.value) + "\\fR";
    }
    out << tag << "\n" << Roff(f.help);
    std::vector<std::string> notes;
    if (!f.choices.empty()) {
      std::string list;
      for (const auto& choice : f.choices) list += (list.empty() ? "" : ", ") + choice;
      notes.push_back("one of " + list);
    }
    if (!f.default_value.empty()) notes.push_back("default " + f.default_value);
    if (f.required) notes.push_back("required");
    if (!notes.empty()) {
      std::string joined;
      for (const auto& n : notes) joined += (joined.empty() ? "" : "; ") + n;
      out << " (" << Roff(joined) << ")";
    }
    out << "\n";
  }
  for (const CommandDoc& sub : c.subcommands) {
    ManCommand(out, sub);
  }
}

// Walk: every command with a path, depth first.
void Walk(const CommandDoc& c, const std::function<void(const CommandDoc&)>& visit) {
  visit(c);
  for (const CommandDoc& sub : c.subcommands) {
    Walk(sub, visit);
  }
}

std::string Words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::vector<std::string> FlagNames(const CommandDoc& c) {
  std::vector<std::string> names;
  for (const FlagDoc& f : c.flags) {
    if (!f.positional) names.insert(names.end(), f.names.begin(), f.names.end());
  }
  return names;
}

// SubcommandNames: what a word after the command may be: its subcommands, else the values of a
// positional that takes one of a fixed set (`nodegate completion bash|zsh`).
std::vector<std::string> SubcommandNames(const CommandDoc& c) {
  std::vector<std::string> names;
  for (const CommandDoc& sub : c.subcommands) {
    if (!sub.hidden) names.push_back(sub.path.substr(sub.path.rfind(' ') + 1));
  }
  for (const FlagDoc& f : c.flags) {
    if (names.empty() && f.positional) names = f.choices;
  }
  return names;
}

// ShellQuote: single quotes, for words and descriptions in the scripts.
std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// Calls visit(flag, pattern) for every flag that takes a value (so the next word is that value),
// where pattern is the completion functions' `case` pattern for it: 'path|--name'|'path|-n'.
void ForEachValueFlag(const CommandDoc& root,
                      const std::function<void(const FlagDoc&, const std::string&)>& visit) {
  Walk(root, [&](const CommandDoc& c) {
    for (const FlagDoc& f : c.flags) {
      if (f.positional || f.value.empty()) continue;
      std::string pattern;
      for (const auto& name : f.names) {
        pattern += (pattern.empty() ? "" : "|") + ShellQuote(c.path + "|" + name);
      }
      visit(f, pattern);
    }
  });
}

}  // namespace

CommandDoc Describe(const CLI::App& app, const std::string& parent_path) {
  CommandDoc c;
  c.path = parent_path.empty() ? app.get_name() : parent_path + " " + app.get_name();
  c.description = app.get_description();
  for (const CLI::Option* opt : app.get_options()) {
    c.flags.push_back(DescribeFlag(*opt));
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    c.subcommands.push_back(Describe(*sub, c.path));
  }
  return c;
}

std::string ManOptions(const std::vector<CommandDoc>& commands) {
  std::ostringstream out;
  out << ".SH OPTIONS\n"
         "Every option of every command, as its\n.B \\-\\-help\nprints it.\n";
  for (const CommandDoc& c : commands) {
    ManCommand(out, c);
  }
  return out.str();
}

std::string FillManPage(const std::string& man_template, const std::vector<CommandDoc>& commands) {
  const std::string marker = ".\\\" @OPTIONS@\n";
  std::string page = man_template;
  const size_t at = page.find(marker);
  if (at != std::string::npos) {
    page.replace(at, marker.size(), ManOptions(commands));
  }
  return page;
}

std::string BashCompletion(const CommandDoc& root) {
  std::ostringstream out;
  out << "# bash completion for nodegate (nodegate completion bash), generated from the same\n"
         "# definitions as --help.\n"
         "_nodegate() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
         "  local path=nodegate i\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    case \"$path ${COMP_WORDS[i]}\" in\n";
  Walk(root, [&](const CommandDoc& c) {
    if (c.path != root.path)
      out << "      " << ShellQuote(c.path) << ") path=\"$path ${COMP_WORDS[i]}\" ;;\n";
  });
  out << "    esac\n"
         "  done\n"
         "  case \"$path|$prev\" in\n";
  ForEachValueFlag(root, [&](const FlagDoc& f, const std::string& pattern) {
    if (f.choices.empty()) {
      out << "    " << pattern << ") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n";
    } else {
      out << "    " << pattern << ") COMPREPLY=($(compgen -W " << ShellQuote(Words(f.choices))
          << " -- \"$cur\")); return ;;\n";
    }
  });
  out << "  esac\n"
         "  local subs='' flags=''\n"
         "  case \"$path\" in\n";
  Walk(root, [&](const CommandDoc& c) {
    out << "    " << ShellQuote(c.path) << ") subs=" << ShellQuote(Words(SubcommandNames(c)))
        << "; flags=" << ShellQuote(Words(FlagNames(c))) << " ;;\n";
  });
  out << "  esac\n"
         "  if [[ \"$cur\" == -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
         "  elif [[ -n \"$subs\" ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n"
         "  else\n"
         "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "  fi\n"
         "}\n"
         "complete -o filenames -F _nodegate nodegate kubectl-nodegate\n";
  return out.str();
}

std::string ZshCompletion(const CommandDoc& root) {
  std::ostringstream out;
  out << "#compdef nodegate kubectl-nodegate\n"
         "# zsh completion for nodegate (nodegate completion zsh), generated from the same\n"
         "# definitions as --help.\n"
         "_nodegate() {\n"
         "  local cmdpath=nodegate i\n"
         "  for ((i = 2; i < CURRENT; i++)); do\n"
         "    case \"$cmdpath ${words[i]}\" in\n";
  Walk(root, [&](const CommandDoc& c) {
    if (c.path != root.path)
      out << "      (" << ShellQuote(c.path) << ") cmdpath=\"$cmdpath ${words[i]}\" ;;\n";
  });
  out << "    esac\n"
         "  done\n"
         "  local cur=\"${words[CURRENT]}\" prev=\"${words[CURRENT-1]}\"\n"
         "  case \"$cmdpath|$prev\" in\n";
  ForEachValueFlag(root, [&](const FlagDoc& f, const std::string& pattern) {
    if (f.choices.empty()) {
      out << "    (" << pattern << ") _files; return ;;\n";
    } else {
      out << "    (" << pattern << ") compadd -- " << Words(f.choices) << "; return ;;\n";
    }
  });
  out << "  esac\n"
         "  local -a subs flags\n"
         "  case \"$cmdpath\" in\n";
  Walk(root, [&](const CommandDoc& c) {
    std::string subs;
    for (const CommandDoc& sub : c.subcommands) {
      if (sub.hidden) continue;
      std::string name = sub.path.substr(sub.path.rfind(' ') + 1);
      std::string desc = sub.description.substr(0, sub.description.find('\n'));
      std::string escaped;
      for (char ch : desc) escaped += ch == ':' ? std::string("\\:") : std::string(1, ch);
      subs += " " + ShellQuote(name + ":" + escaped);
    }
    if (subs.empty()) {
      for (const std::string& value : SubcommandNames(c)) subs += " " + ShellQuote(value);
    }
    std::string flags;
    for (const auto& name : FlagNames(c)) flags += " " + ShellQuote(name);
    out << "    (" << ShellQuote(c.path) << ") subs=(" << subs << " ); flags=(" << flags
        << " ) ;;\n";
  });
  out << "  esac\n"
         "  if [[ \"$cur\" == -* ]]; then\n"
         "    compadd -- \"${flags[@]}\"\n"
         "  elif (( ${#subs} )); then\n"
         "    _describe command subs\n"
         "  else\n"
         "    _files\n"
         "  fi\n"
         "}\n"
         "_nodegate \"$@\"\n";
  return out.str();
}

}  // namespace nodegate::help
