# bash completion for chring(1).
# Commands and options are read from `chring --help` and `chring CMD --help`
# (CLI11's layout: a "Subcommands:" section, option lines starting with
# spaces and "-"), so a new command or option completes without a change
# here. Values: files for FILE options, the known words for --format and
# --placement, hashers and numbers are left to the user.
_chring_commands() {
    "$1" --help 2>/dev/null | awk '/^Subcommands:/ { s = 1; next } /^$/ { s = 0 } s && /^  [a-z]/ { print $1 }'
}

_chring_options() {
    "$1" "$2" --help 2>/dev/null | awk '/^  *-/ { n = split($1, a, ","); for (i = 1; i <= n; i++) print a[i] }'
}

_chring() {
    local cur prev cmd i
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    cmd=
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            -*) ;;
            *) cmd=${COMP_WORDS[i]}; break ;;
        esac
    done

    if [ -z "$cmd" ]; then
        COMPREPLY=($(compgen -W "$(_chring_commands "${COMP_WORDS[0]}") --help --version" -- "$cur"))
        return
    fi

    case $prev in
        -m | --members | --key-file | --keys | --svg | -o | --output | --out | --cacert | --cert | --key | \
            --password-file)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --plugin-dir)
            COMPREPLY=($(compgen -d -- "$cur"))
            return ;;
        --format)
            COMPREPLY=($(compgen -W "table json csv" -- "$cur"))
            return ;;
        --placement)
            COMPREPLY=($(compgen -W "native ketama ketama-unweighted nginx" -- "$cur"))
            return ;;
        --policy)
            COMPREPLY=($(compgen -W "nodes zones-first nts" -- "$cur"))
            return ;;
        --spill)
            COMPREPLY=($(compgen -W "replicas shuffle" -- "$cur"))
            return ;;
        --workload)
            COMPREPLY=($(compgen -W "uniform zipf:1.1" -- "$cur"))
            return ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_chring_options "${COMP_WORDS[0]}" "$cmd")" -- "$cur"))
    fi
}
complete -o default -F _chring chring
