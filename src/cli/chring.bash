# bash completion for chring(1).
# Commands and options are read from `chring --help` and `chring CMD --help`
# (CLI11's layout: a "Subcommands:" section, option lines starting with
# spaces and "-"), so a new command or option completes without a change
# here; `chring etcd` completes its operations (add, ..., status, down, up,
# panic-threshold) and each operation's options (--wait, --format, --for,
# --hold) from `chring etcd OP --help`.
# Values: files for FILE options, commands for --exec and --confirm, the
# known words for --format and --placement; hashers, names and numbers are
# left to the user.
_chring_commands() {
    "$@" --help 2>/dev/null | awk '/^Subcommands:/ { s = 1; next } /^$/ { s = 0 } s && /^  [a-z]/ { print $1 }'
}

_chring_options() {
    # a flag's default value ("--wait{60}") is not part of its name
    "$@" --help 2>/dev/null | awk '/^  *-/ { sub(/\{.*/, "", $1); n = split($1, a, ","); for (i = 1; i <= n; i++) print a[i] }'
}

_chring() {
    local cur prev cmd op i
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
    # chring etcd [flags] OP: the first word after `etcd` that is an operation
    # (its flags' values, a URL or a prefix, are not).
    op=
    if [ "$cmd" = etcd ]; then
        local ops
        ops=" $(_chring_commands "${COMP_WORDS[0]}" etcd | tr '\n' ' ') "
        for ((i = i + 1; i < COMP_CWORD; i++)); do
            if [[ $ops == *" ${COMP_WORDS[i]} "* ]]; then op=${COMP_WORDS[i]}; break; fi
        done
    fi

    case $prev in
        -m | --members | --key-file | --keys | --svg | -o | --output | --out | --cacert | --cert | --key | \
            --password-file)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --plugin-dir)
            COMPREPLY=($(compgen -d -- "$cur"))
            return ;;
        --exec | --confirm)
            COMPREPLY=($(compgen -c -- "$cur"))
            return ;;
        --format)
            case $op in
                show) COMPREPLY=($(compgen -W "table json ring-file" -- "$cur")) ;;
                status) COMPREPLY=($(compgen -W "table json" -- "$cur")) ;;
                *) COMPREPLY=($(compgen -W "table json csv" -- "$cur")) ;;
            esac
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
        --for)
            COMPREPLY=($(compgen -W "30m 1h 4h 1d" -- "$cur"))
            return ;;
        --workload)
            COMPREPLY=($(compgen -W "uniform zipf:1.1" -- "$cur"))
            return ;;
    esac

    if [[ $cur == -* ]]; then
        if [ -n "$op" ]; then
            COMPREPLY=($(compgen -W "$(_chring_options "${COMP_WORDS[0]}" etcd "$op") \
                                    $(_chring_options "${COMP_WORDS[0]}" etcd)" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_chring_options "${COMP_WORDS[0]}" "$cmd")" -- "$cur"))
        fi
    elif [ "$cmd" = etcd ] && [ -z "$op" ]; then
        case $prev in
            --etcd | --prefix | --timeout | --user) ;;
            *) COMPREPLY=($(compgen -W "$(_chring_commands "${COMP_WORDS[0]}" etcd)" -- "$cur")) ;;
        esac
    fi
}
complete -o default -F _chring chring
