# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_session_doctor_global_optspecs
    string join \n h/help V/version
end

function __fish_session_doctor_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_session_doctor_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_session_doctor_using_subcommand
    set -l cmd (__fish_session_doctor_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c session-doctor -n "__fish_session_doctor_needs_command" -s h -l help -d 'Print help'
complete -c session-doctor -n "__fish_session_doctor_needs_command" -s V -l version -d 'Print version'
complete -c session-doctor -n "__fish_session_doctor_needs_command" -f -a "list" -d 'One row per session: sizes, compactions, token totals, findings'
complete -c session-doctor -n "__fish_session_doctor_needs_command" -f -a "inspect" -d 'One row per message of a session: sizes, tokens, parts, flags'
complete -c session-doctor -n "__fish_session_doctor_needs_command" -f -a "check" -d 'Diagnose sessions; exit 1 when a finding reaches --fail-on'
complete -c session-doctor -n "__fish_session_doctor_needs_command" -f -a "repair" -d 'Write a repaired copy of the store(s) into --out'
complete -c session-doctor -n "__fish_session_doctor_needs_command" -f -a "compact" -d 'Write a copy in which a session (without --session: every session a finding asks for) fits its model budget and request-size limit'
complete -c session-doctor -n "__fish_session_doctor_needs_command" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c session-doctor -n "__fish_session_doctor_needs_command" -f -a "man" -d 'Print the man page (roff) of session-doctor or of one command to stdout'
complete -c session-doctor -n "__fish_session_doctor_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l format -d 'Output format' -r -f -a "table\t'Tables for people'
json\t'One JSON document with "schema_version": 1 (schema/session-doctor.schema.json)'
markdown\t'A GitHub-flavoured Markdown job summary (for $GITHUB_STEP_SUMMARY)'
github\t'GitHub Actions workflow commands: one ::error/::warning/::notice line per finding'
sarif\t'One SARIF 2.1.0 log (code scanning upload)'"
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -s j -l jobs -d 'Worker threads (default: the number of cores)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l session -d 'Only this session' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l ignore -d 'Leave out findings with this code (repeatable; adds to the config file\'s `ignore`)' -r -f -a "unreadable\t'a row, file or line that is not valid JSON or lacks a required field'
torn-tail\t'the last line of a JSONL file is an unfinished write'
orphan-part\t'a part whose message does not exist'
duplicate-id\t'an id stored more than once'
dangling-parent\t'a parent id that names no message of the session'
dangling-logical-parent\t'a Claude Code logicalParentUuid that names no message'
parent-cycle\t'parent links that form a loop'
closed-compression-session\t'a session ended by a compression that no session continues'
empty-continuation\t'the session a resume lands on continues a compaction but holds no message'
stale-parent\t'a message after a compaction whose parent is from before it'
stale-first-kept\t'a compaction\'s stored first kept entry the agent ignores, or that resends cut or orphaned history'
orphan-in-context\t'a message the model sees whose parent it does not see'
compaction-loop\t'repeated automatic compactions that make no progress'
compaction-failed\t'a compaction summary that ended in an error'
unfinished-tool-call\t'a tool call left without a result'
overflow-error\t'a stored provider error that says the request was too big'
unanswered-turns\t'the history ends with two or more user turns that got no reply'
impossible-usage\t'a stored token count above the model\'s context window'
bad-token-count\t'a stored token count that is not a count (read as 0)'
over-budget\t'the next turn does not fit the model\'s usable budget'
payload-too-large\t'the next request body exceeds the request-size limit'
media-in-history\t'inline media older than the newest media message, resent every turn'"
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l context -d 'Context window of the model the session resumes with (tokens)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l max-output -d 'Maximum output tokens of that model' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l input-limit -d 'Input limit of that model (tokens), when it has one' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l model -d 'Look the limits of this `provider/model` up in the models.dev JSON' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l models-json -d 'models.dev JSON (default: ~/.cache/opencode/models.json, then ~/.cache/kilo/models.json)' -r -F
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l max-request-bytes -d 'Largest request body the provider or gateway accepts (bytes; default: 6291456, 6 MiB)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l headroom -d 'Share of --max-request-bytes kept for the system prompt and tool schemas the agent adds (0 to 0.95; default: 0.25)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l config -d 'Read this config file instead of looking one up (./session-doctor.toml, else $XDG_CONFIG_HOME/session-doctor/config.toml, else ~/.config/session-doctor/config.toml). Flags override it' -r -F
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -l no-config -d 'Read no config file'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand inspect" -l format -d 'Output format' -r -f -a "table\t'Tables for people'
json\t'One JSON document with "schema_version": 1 (schema/session-doctor.schema.json)'
markdown\t'A GitHub-flavoured Markdown job summary (for $GITHUB_STEP_SUMMARY)'
github\t'GitHub Actions workflow commands: one ::error/::warning/::notice line per finding'
sarif\t'One SARIF 2.1.0 log (code scanning upload)'"
complete -c session-doctor -n "__fish_session_doctor_using_subcommand inspect" -s j -l jobs -d 'Worker threads (default: the number of cores)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand inspect" -l session -d 'The session to inspect (an id or a unique prefix of one; optional when the stores hold one session)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand inspect" -l top -d 'Also list the N largest parts (by stored bytes)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand inspect" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l format -d 'Output format' -r -f -a "table\t'Tables for people'
json\t'One JSON document with "schema_version": 1 (schema/session-doctor.schema.json)'
markdown\t'A GitHub-flavoured Markdown job summary (for $GITHUB_STEP_SUMMARY)'
github\t'GitHub Actions workflow commands: one ::error/::warning/::notice line per finding'
sarif\t'One SARIF 2.1.0 log (code scanning upload)'"
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -s j -l jobs -d 'Worker threads (default: the number of cores)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l session -d 'Only this session' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l fail-on -d 'Exit 1 when a finding of this severity or worse exists (`never`: always 0; default: the config file\'s `fail_on`, else error)' -r -f -a "error\t'An error'
warning\t'A warning or an error'
info\t'Any finding'
never\t'Nothing: always exit 0 (unless an input cannot be read)'"
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l ignore -d 'Leave out findings with this code (repeatable; adds to the config file\'s `ignore`)' -r -f -a "unreadable\t'a row, file or line that is not valid JSON or lacks a required field'
torn-tail\t'the last line of a JSONL file is an unfinished write'
orphan-part\t'a part whose message does not exist'
duplicate-id\t'an id stored more than once'
dangling-parent\t'a parent id that names no message of the session'
dangling-logical-parent\t'a Claude Code logicalParentUuid that names no message'
parent-cycle\t'parent links that form a loop'
closed-compression-session\t'a session ended by a compression that no session continues'
empty-continuation\t'the session a resume lands on continues a compaction but holds no message'
stale-parent\t'a message after a compaction whose parent is from before it'
stale-first-kept\t'a compaction\'s stored first kept entry the agent ignores, or that resends cut or orphaned history'
orphan-in-context\t'a message the model sees whose parent it does not see'
compaction-loop\t'repeated automatic compactions that make no progress'
compaction-failed\t'a compaction summary that ended in an error'
unfinished-tool-call\t'a tool call left without a result'
overflow-error\t'a stored provider error that says the request was too big'
unanswered-turns\t'the history ends with two or more user turns that got no reply'
impossible-usage\t'a stored token count above the model\'s context window'
bad-token-count\t'a stored token count that is not a count (read as 0)'
over-budget\t'the next turn does not fit the model\'s usable budget'
payload-too-large\t'the next request body exceeds the request-size limit'
media-in-history\t'inline media older than the newest media message, resent every turn'"
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l context -d 'Context window of the model the session resumes with (tokens)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l max-output -d 'Maximum output tokens of that model' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l input-limit -d 'Input limit of that model (tokens), when it has one' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l model -d 'Look the limits of this `provider/model` up in the models.dev JSON' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l models-json -d 'models.dev JSON (default: ~/.cache/opencode/models.json, then ~/.cache/kilo/models.json)' -r -F
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l max-request-bytes -d 'Largest request body the provider or gateway accepts (bytes; default: 6291456, 6 MiB)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l headroom -d 'Share of --max-request-bytes kept for the system prompt and tool schemas the agent adds (0 to 0.95; default: 0.25)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l config -d 'Read this config file instead of looking one up (./session-doctor.toml, else $XDG_CONFIG_HOME/session-doctor/config.toml, else ~/.config/session-doctor/config.toml). Flags override it' -r -F
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -l no-config -d 'Read no config file'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand repair" -l format -d 'Output format' -r -f -a "table\t'Tables for people'
json\t'One JSON document with "schema_version": 1 (schema/session-doctor.schema.json)'
markdown\t'A GitHub-flavoured Markdown job summary (for $GITHUB_STEP_SUMMARY)'
github\t'GitHub Actions workflow commands: one ::error/::warning/::notice line per finding'
sarif\t'One SARIF 2.1.0 log (code scanning upload)'"
complete -c session-doctor -n "__fish_session_doctor_using_subcommand repair" -s j -l jobs -d 'Worker threads (default: the number of cores)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand repair" -l out -d 'Folder to write the copies into (created if missing). Never the source folder or inside it' -r -F
complete -c session-doctor -n "__fish_session_doctor_using_subcommand repair" -l session -d 'Only repair this session (the whole store is still copied)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand repair" -l dry-run -d 'Print the changes, write nothing'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand repair" -l force -d 'Replace copies that already exist under --out'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand repair" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l format -d 'Output format' -r -f -a "table\t'Tables for people'
json\t'One JSON document with "schema_version": 1 (schema/session-doctor.schema.json)'
markdown\t'A GitHub-flavoured Markdown job summary (for $GITHUB_STEP_SUMMARY)'
github\t'GitHub Actions workflow commands: one ::error/::warning/::notice line per finding'
sarif\t'One SARIF 2.1.0 log (code scanning upload)'"
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -s j -l jobs -d 'Worker threads (default: the number of cores)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l session -d 'The session to compact (an id or a unique prefix of one). Without it, every session with a finding compact fixes is compacted, one copy per store' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l out -d 'Folder to write the copy into. Never the source folder or inside it' -r -F
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l keep-turns -d 'If cutting history is needed, keep only the last N user turns' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l ignore -d 'Leave out findings with this code (repeatable; adds to the config file\'s `ignore`)' -r -f -a "unreadable\t'a row, file or line that is not valid JSON or lacks a required field'
torn-tail\t'the last line of a JSONL file is an unfinished write'
orphan-part\t'a part whose message does not exist'
duplicate-id\t'an id stored more than once'
dangling-parent\t'a parent id that names no message of the session'
dangling-logical-parent\t'a Claude Code logicalParentUuid that names no message'
parent-cycle\t'parent links that form a loop'
closed-compression-session\t'a session ended by a compression that no session continues'
empty-continuation\t'the session a resume lands on continues a compaction but holds no message'
stale-parent\t'a message after a compaction whose parent is from before it'
stale-first-kept\t'a compaction\'s stored first kept entry the agent ignores, or that resends cut or orphaned history'
orphan-in-context\t'a message the model sees whose parent it does not see'
compaction-loop\t'repeated automatic compactions that make no progress'
compaction-failed\t'a compaction summary that ended in an error'
unfinished-tool-call\t'a tool call left without a result'
overflow-error\t'a stored provider error that says the request was too big'
unanswered-turns\t'the history ends with two or more user turns that got no reply'
impossible-usage\t'a stored token count above the model\'s context window'
bad-token-count\t'a stored token count that is not a count (read as 0)'
over-budget\t'the next turn does not fit the model\'s usable budget'
payload-too-large\t'the next request body exceeds the request-size limit'
media-in-history\t'inline media older than the newest media message, resent every turn'"
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l context -d 'Context window of the model the session resumes with (tokens)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l max-output -d 'Maximum output tokens of that model' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l input-limit -d 'Input limit of that model (tokens), when it has one' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l model -d 'Look the limits of this `provider/model` up in the models.dev JSON' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l models-json -d 'models.dev JSON (default: ~/.cache/opencode/models.json, then ~/.cache/kilo/models.json)' -r -F
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l max-request-bytes -d 'Largest request body the provider or gateway accepts (bytes; default: 6291456, 6 MiB)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l headroom -d 'Share of --max-request-bytes kept for the system prompt and tool schemas the agent adds (0 to 0.95; default: 0.25)' -r
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l config -d 'Read this config file instead of looking one up (./session-doctor.toml, else $XDG_CONFIG_HOME/session-doctor/config.toml, else ~/.config/session-doctor/config.toml). Flags override it' -r -F
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l dry-run -d 'Print the plan (steps, figures, changes), write nothing'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l force -d 'Replace a copy that already exists under --out'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -l no-config -d 'Read no config file'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand compact" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand completions" -s h -l help -d 'Print help'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand man" -s h -l help -d 'Print help'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand help; and not __fish_seen_subcommand_from list inspect check repair compact completions man help" -f -a "list" -d 'One row per session: sizes, compactions, token totals, findings'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand help; and not __fish_seen_subcommand_from list inspect check repair compact completions man help" -f -a "inspect" -d 'One row per message of a session: sizes, tokens, parts, flags'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand help; and not __fish_seen_subcommand_from list inspect check repair compact completions man help" -f -a "check" -d 'Diagnose sessions; exit 1 when a finding reaches --fail-on'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand help; and not __fish_seen_subcommand_from list inspect check repair compact completions man help" -f -a "repair" -d 'Write a repaired copy of the store(s) into --out'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand help; and not __fish_seen_subcommand_from list inspect check repair compact completions man help" -f -a "compact" -d 'Write a copy in which a session (without --session: every session a finding asks for) fits its model budget and request-size limit'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand help; and not __fish_seen_subcommand_from list inspect check repair compact completions man help" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand help; and not __fish_seen_subcommand_from list inspect check repair compact completions man help" -f -a "man" -d 'Print the man page (roff) of session-doctor or of one command to stdout'
complete -c session-doctor -n "__fish_session_doctor_using_subcommand help; and not __fish_seen_subcommand_from list inspect check repair compact completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
