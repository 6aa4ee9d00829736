#compdef session-doctor

autoload -U is-at-least

_session-doctor() {
    typeset -A opt_args
    typeset -a _arguments_options
    local ret=1

    if is-at-least 5.2; then
        _arguments_options=(-s -S -C)
    else
        _arguments_options=(-s -C)
    fi

    local context curcontext="$curcontext" state line
    _arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_session-doctor_commands" \
"*::: :->session-doctor" \
&& ret=0
    case $state in
    (session-doctor)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:session-doctor-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
'--format=[Output format]:FORMAT:((table\:"Tables for people"
json\:"One JSON document with "schema_version"\: 1 (schema/session-doctor.schema.json)"
markdown\:"A GitHub-flavoured Markdown job summary (for \$GITHUB_STEP_SUMMARY)"
github\:"GitHub Actions workflow commands\: one \:\:error/\:\:warning/\:\:notice line per finding"
sarif\:"One SARIF 2.1.0 log (code scanning upload)"))' \
'-j+[Worker threads (default\: the number of cores)]:N:_default' \
'--jobs=[Worker threads (default\: the number of cores)]:N:_default' \
'--session=[Only this session]:ID:_default' \
'*--ignore=[Leave out findings with this code (repeatable; adds to the config file'\''s \`ignore\`)]:CODE:((unreadable\:"a row, file or line that is not valid JSON or lacks a required field"
torn-tail\:"the last line of a JSONL file is an unfinished write"
orphan-part\:"a part whose message does not exist"
duplicate-id\:"an id stored more than once"
dangling-parent\:"a parent id that names no message of the session"
dangling-logical-parent\:"a Claude Code logicalParentUuid that names no message"
parent-cycle\:"parent links that form a loop"
closed-compression-session\:"a session ended by a compression that no session continues"
empty-continuation\:"the session a resume lands on continues a compaction but holds no message"
stale-parent\:"a message after a compaction whose parent is from before it"
stale-first-kept\:"a compaction'\''s stored first kept entry the agent ignores, or that resends cut or orphaned history"
orphan-in-context\:"a message the model sees whose parent it does not see"
compaction-loop\:"repeated automatic compactions that make no progress"
compaction-failed\:"a compaction summary that ended in an error"
unfinished-tool-call\:"a tool call left without a result"
overflow-error\:"a stored provider error that says the request was too big"
unanswered-turns\:"the history ends with two or more user turns that got no reply"
impossible-usage\:"a stored token count above the model'\''s context window"
bad-token-count\:"a stored token count that is not a count (read as 0)"
over-budget\:"the next turn does not fit the model'\''s usable budget"
payload-too-large\:"the next request body exceeds the request-size limit"
media-in-history\:"inline media older than the newest media message, resent every turn"))' \
'--context=[Context window of the model the session resumes with (tokens)]:TOKENS:_default' \
'--max-output=[Maximum output tokens of that model]:TOKENS:_default' \
'--input-limit=[Input limit of that model (tokens), when it has one]:TOKENS:_default' \
'--model=[Look the limits of this \`provider/model\` up in the models.dev JSON]:PROVIDER/MODEL:_default' \
'--models-json=[models.dev JSON (default\: ~/.cache/opencode/models.json, then ~/.cache/kilo/models.json)]:PATH:_files' \
'--max-request-bytes=[Largest request body the provider or gateway accepts (bytes; default\: 6291456, 6 MiB)]:BYTES:_default' \
'--headroom=[Share of --max-request-bytes kept for the system prompt and tool schemas the agent adds (0 to 0.95; default\: 0.25)]:SHARE:_default' \
'--config=[Read this config file instead of looking one up (./session-doctor.toml, else \$XDG_CONFIG_HOME/session-doctor/config.toml, else ~/.config/session-doctor/config.toml). Flags override it]:PATH:_files' \
'(--config)--no-config[Read no config file]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::paths -- Stores to read, or folders holding them (default\: every agent'\''s data dirs):_files' \
&& ret=0
;;
(inspect)
_arguments "${_arguments_options[@]}" : \
'--format=[Output format]:FORMAT:((table\:"Tables for people"
json\:"One JSON document with "schema_version"\: 1 (schema/session-doctor.schema.json)"
markdown\:"A GitHub-flavoured Markdown job summary (for \$GITHUB_STEP_SUMMARY)"
github\:"GitHub Actions workflow commands\: one \:\:error/\:\:warning/\:\:notice line per finding"
sarif\:"One SARIF 2.1.0 log (code scanning upload)"))' \
'-j+[Worker threads (default\: the number of cores)]:N:_default' \
'--jobs=[Worker threads (default\: the number of cores)]:N:_default' \
'--session=[The session to inspect (an id or a unique prefix of one; optional when the stores hold one session)]:ID:_default' \
'--top=[Also list the N largest parts (by stored bytes)]:N:_default' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::paths -- Stores to read, or folders holding them (default\: every agent'\''s data dirs):_files' \
&& ret=0
;;
(check)
_arguments "${_arguments_options[@]}" : \
'--format=[Output format]:FORMAT:((table\:"Tables for people"
json\:"One JSON document with "schema_version"\: 1 (schema/session-doctor.schema.json)"
markdown\:"A GitHub-flavoured Markdown job summary (for \$GITHUB_STEP_SUMMARY)"
github\:"GitHub Actions workflow commands\: one \:\:error/\:\:warning/\:\:notice line per finding"
sarif\:"One SARIF 2.1.0 log (code scanning upload)"))' \
'-j+[Worker threads (default\: the number of cores)]:N:_default' \
'--jobs=[Worker threads (default\: the number of cores)]:N:_default' \
'--session=[Only this session]:ID:_default' \
'--fail-on=[Exit 1 when a finding of this severity or worse exists (\`never\`\: always 0; default\: the config file'\''s \`fail_on\`, else error)]:FAIL_ON:((error\:"An error"
warning\:"A warning or an error"
info\:"Any finding"
never\:"Nothing\: always exit 0 (unless an input cannot be read)"))' \
'*--ignore=[Leave out findings with this code (repeatable; adds to the config file'\''s \`ignore\`)]:CODE:((unreadable\:"a row, file or line that is not valid JSON or lacks a required field"
torn-tail\:"the last line of a JSONL file is an unfinished write"
orphan-part\:"a part whose message does not exist"
duplicate-id\:"an id stored more than once"
dangling-parent\:"a parent id that names no message of the session"
dangling-logical-parent\:"a Claude Code logicalParentUuid that names no message"
parent-cycle\:"parent links that form a loop"
closed-compression-session\:"a session ended by a compression that no session continues"
empty-continuation\:"the session a resume lands on continues a compaction but holds no message"
stale-parent\:"a message after a compaction whose parent is from before it"
stale-first-kept\:"a compaction'\''s stored first kept entry the agent ignores, or that resends cut or orphaned history"
orphan-in-context\:"a message the model sees whose parent it does not see"
compaction-loop\:"repeated automatic compactions that make no progress"
compaction-failed\:"a compaction summary that ended in an error"
unfinished-tool-call\:"a tool call left without a result"
overflow-error\:"a stored provider error that says the request was too big"
unanswered-turns\:"the history ends with two or more user turns that got no reply"
impossible-usage\:"a stored token count above the model'\''s context window"
bad-token-count\:"a stored token count that is not a count (read as 0)"
over-budget\:"the next turn does not fit the model'\''s usable budget"
payload-too-large\:"the next request body exceeds the request-size limit"
media-in-history\:"inline media older than the newest media message, resent every turn"))' \
'--context=[Context window of the model the session resumes with (tokens)]:TOKENS:_default' \
'--max-output=[Maximum output tokens of that model]:TOKENS:_default' \
'--input-limit=[Input limit of that model (tokens), when it has one]:TOKENS:_default' \
'--model=[Look the limits of this \`provider/model\` up in the models.dev JSON]:PROVIDER/MODEL:_default' \
'--models-json=[models.dev JSON (default\: ~/.cache/opencode/models.json, then ~/.cache/kilo/models.json)]:PATH:_files' \
'--max-request-bytes=[Largest request body the provider or gateway accepts (bytes; default\: 6291456, 6 MiB)]:BYTES:_default' \
'--headroom=[Share of --max-request-bytes kept for the system prompt and tool schemas the agent adds (0 to 0.95; default\: 0.25)]:SHARE:_default' \
'--config=[Read this config file instead of looking one up (./session-doctor.toml, else \$XDG_CONFIG_HOME/session-doctor/config.toml, else ~/.config/session-doctor/config.toml). Flags override it]:PATH:_files' \
'(--config)--no-config[Read no config file]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::paths -- Stores to read, or folders holding them (default\: every agent'\''s data dirs):_files' \
&& ret=0
;;
(repair)
_arguments "${_arguments_options[@]}" : \
'--format=[Output format]:FORMAT:((table\:"Tables for people"
json\:"One JSON document with "schema_version"\: 1 (schema/session-doctor.schema.json)"
markdown\:"A GitHub-flavoured Markdown job summary (for \$GITHUB_STEP_SUMMARY)"
github\:"GitHub Actions workflow commands\: one \:\:error/\:\:warning/\:\:notice line per finding"
sarif\:"One SARIF 2.1.0 log (code scanning upload)"))' \
'-j+[Worker threads (default\: the number of cores)]:N:_default' \
'--jobs=[Worker threads (default\: the number of cores)]:N:_default' \
'--out=[Folder to write the copies into (created if missing). Never the source folder or inside it]:DIR:_files' \
'--session=[Only repair this session (the whole store is still copied)]:ID:_default' \
'--dry-run[Print the changes, write nothing]' \
'--force[Replace copies that already exist under --out]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::paths -- Stores to read, or folders holding them (default\: every agent'\''s data dirs):_files' \
&& ret=0
;;
(compact)
_arguments "${_arguments_options[@]}" : \
'--format=[Output format]:FORMAT:((table\:"Tables for people"
json\:"One JSON document with "schema_version"\: 1 (schema/session-doctor.schema.json)"
markdown\:"A GitHub-flavoured Markdown job summary (for \$GITHUB_STEP_SUMMARY)"
github\:"GitHub Actions workflow commands\: one \:\:error/\:\:warning/\:\:notice line per finding"
sarif\:"One SARIF 2.1.0 log (code scanning upload)"))' \
'-j+[Worker threads (default\: the number of cores)]:N:_default' \
'--jobs=[Worker threads (default\: the number of cores)]:N:_default' \
'--session=[The session to compact (an id or a unique prefix of one). Without it, every session with a finding compact fixes is compacted, one copy per store]:ID:_default' \
'--out=[Folder to write the copy into. Never the source folder or inside it]:DIR:_files' \
'--keep-turns=[If cutting history is needed, keep only the last N user turns]:N:_default' \
'*--ignore=[Leave out findings with this code (repeatable; adds to the config file'\''s \`ignore\`)]:CODE:((unreadable\:"a row, file or line that is not valid JSON or lacks a required field"
torn-tail\:"the last line of a JSONL file is an unfinished write"
orphan-part\:"a part whose message does not exist"
duplicate-id\:"an id stored more than once"
dangling-parent\:"a parent id that names no message of the session"
dangling-logical-parent\:"a Claude Code logicalParentUuid that names no message"
parent-cycle\:"parent links that form a loop"
closed-compression-session\:"a session ended by a compression that no session continues"
empty-continuation\:"the session a resume lands on continues a compaction but holds no message"
stale-parent\:"a message after a compaction whose parent is from before it"
stale-first-kept\:"a compaction'\''s stored first kept entry the agent ignores, or that resends cut or orphaned history"
orphan-in-context\:"a message the model sees whose parent it does not see"
compaction-loop\:"repeated automatic compactions that make no progress"
compaction-failed\:"a compaction summary that ended in an error"
unfinished-tool-call\:"a tool call left without a result"
overflow-error\:"a stored provider error that says the request was too big"
unanswered-turns\:"the history ends with two or more user turns that got no reply"
impossible-usage\:"a stored token count above the model'\''s context window"
bad-token-count\:"a stored token count that is not a count (read as 0)"
over-budget\:"the next turn does not fit the model'\''s usable budget"
payload-too-large\:"the next request body exceeds the request-size limit"
media-in-history\:"inline media older than the newest media message, resent every turn"))' \
'--context=[Context window of the model the session resumes with (tokens)]:TOKENS:_default' \
'--max-output=[Maximum output tokens of that model]:TOKENS:_default' \
'--input-limit=[Input limit of that model (tokens), when it has one]:TOKENS:_default' \
'--model=[Look the limits of this \`provider/model\` up in the models.dev JSON]:PROVIDER/MODEL:_default' \
'--models-json=[models.dev JSON (default\: ~/.cache/opencode/models.json, then ~/.cache/kilo/models.json)]:PATH:_files' \
'--max-request-bytes=[Largest request body the provider or gateway accepts (bytes; default\: 6291456, 6 MiB)]:BYTES:_default' \
'--headroom=[Share of --max-request-bytes kept for the system prompt and tool schemas the agent adds (0 to 0.95; default\: 0.25)]:SHARE:_default' \
'--config=[Read this config file instead of looking one up (./session-doctor.toml, else \$XDG_CONFIG_HOME/session-doctor/config.toml, else ~/.config/session-doctor/config.toml). Flags override it]:PATH:_files' \
'--dry-run[Print the plan (steps, figures, changes), write nothing]' \
'--force[Replace a copy that already exists under --out]' \
'(--config)--no-config[Read no config file]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::paths -- Stores to read, or folders holding them (default\: every agent'\''s data dirs):_files' \
&& ret=0
;;
(completions)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
':shell:(bash elvish fish powershell zsh)' \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
'::command -- The command whose page to print (default\: the top-level page):_default' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_session-doctor__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:session-doctor-help-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(inspect)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(check)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(repair)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(compact)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(completions)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
}

(( $+functions[_session-doctor_commands] )) ||
_session-doctor_commands() {
    local commands; commands=(
'list:One row per session\: sizes, compactions, token totals, findings' \
'inspect:One row per message of a session\: sizes, tokens, parts, flags' \
'check:Diagnose sessions; exit 1 when a finding reaches --fail-on' \
'repair:Write a repaired copy of the store(s) into --out' \
'compact:Write a copy in which a session (without --session\: every session a finding asks for) fits its model budget and request-size limit' \
'completions:Print a shell completion script to stdout' \
'man:Print the man page (roff) of session-doctor or of one command to stdout' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'session-doctor commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__check_commands] )) ||
_session-doctor__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor check commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__compact_commands] )) ||
_session-doctor__subcmd__compact_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor compact commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__completions_commands] )) ||
_session-doctor__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor completions commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__help_commands] )) ||
_session-doctor__subcmd__help_commands() {
    local commands; commands=(
'list:One row per session\: sizes, compactions, token totals, findings' \
'inspect:One row per message of a session\: sizes, tokens, parts, flags' \
'check:Diagnose sessions; exit 1 when a finding reaches --fail-on' \
'repair:Write a repaired copy of the store(s) into --out' \
'compact:Write a copy in which a session (without --session\: every session a finding asks for) fits its model budget and request-size limit' \
'completions:Print a shell completion script to stdout' \
'man:Print the man page (roff) of session-doctor or of one command to stdout' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'session-doctor help commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__help__subcmd__check_commands] )) ||
_session-doctor__subcmd__help__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor help check commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__help__subcmd__compact_commands] )) ||
_session-doctor__subcmd__help__subcmd__compact_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor help compact commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__help__subcmd__completions_commands] )) ||
_session-doctor__subcmd__help__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor help completions commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__help__subcmd__help_commands] )) ||
_session-doctor__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor help help commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__help__subcmd__inspect_commands] )) ||
_session-doctor__subcmd__help__subcmd__inspect_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor help inspect commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__help__subcmd__list_commands] )) ||
_session-doctor__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor help list commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__help__subcmd__man_commands] )) ||
_session-doctor__subcmd__help__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor help man commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__help__subcmd__repair_commands] )) ||
_session-doctor__subcmd__help__subcmd__repair_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor help repair commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__inspect_commands] )) ||
_session-doctor__subcmd__inspect_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor inspect commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__list_commands] )) ||
_session-doctor__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor list commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__man_commands] )) ||
_session-doctor__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor man commands' commands "$@"
}
(( $+functions[_session-doctor__subcmd__repair_commands] )) ||
_session-doctor__subcmd__repair_commands() {
    local commands; commands=()
    _describe -t commands 'session-doctor repair commands' commands "$@"
}

if [ "$funcstack[1]" = "_session-doctor" ]; then
    _session-doctor "$@"
else
    compdef _session-doctor session-doctor
fi
