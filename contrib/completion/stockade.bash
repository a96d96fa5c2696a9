# bash completion for stockade(1)
#
# Uses the bash-completion package's helpers where they are loaded, and plain
# compgen where they are not (a shell that sources this file by hand), so it
# never fails with "_init_completion: command not found".
_stockade_files() {
    if declare -F _filedir >/dev/null; then
        _filedir "$@"
    elif [[ $1 == -d ]]; then
        COMPREPLY+=($(compgen -d -- "$cur"))
    else
        COMPREPLY+=($(compgen -f -- "$cur"))
    fi
}
_stockade_command_offset() {
    if declare -F _command_offset >/dev/null; then
        _command_offset "$1"
    elif [[ $cword -eq $1 ]]; then
        COMPREPLY=($(compgen -c -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
_stockade() {
    local cur prev words cword
    COMPREPLY=()
    if declare -F _init_completion >/dev/null; then
        _init_completion || return
    else
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
    fi
    local commands="run profile check bench oracle serve stop ps logs --help --version"
    local run_opts="--profile --worktree --mount --rootfs --env --allow-secret --workdir --user
        --name --stdin --quiet --result --follow-symlinks --memory --pids --cpu-time --timeout --output-limit
        --tmp-size --require --log-level --help"
    if [[ $cword -eq 1 ]]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return
    fi
    local i
    for ((i = 2; i < cword; i++)); do
        [[ ${words[i]} == -- ]] && { _stockade_command_offset $((i + 1)); return; }
    done
    case ${words[1]} in
        profile)
            if [[ $cword -eq 2 ]]; then
                COMPREPLY=($(compgen -W "show check secret-names" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "held-test build dev-server" -- "$cur"))
                _stockade_files json
            fi
            return ;;
        stop|logs)
            case $prev in
                --port) ;;
                *) COMPREPLY=($(compgen -W "$(stockade ps 2>/dev/null | awk 'NR > 1 { print $1 }')
                    $([[ ${words[1]} == stop ]] && echo --port || echo --follow) --help" -- "$cur")) ;;
            esac
            return ;;
        ps) COMPREPLY=($(compgen -W "--json --help" -- "$cur")); return ;;
        check)
            case $prev in
                --profile) COMPREPLY=($(compgen -W "held-test build dev-server" -- "$cur")); _stockade_files json ;;
                *) COMPREPLY=($(compgen -W "--json --profile --help" -- "$cur")) ;;
            esac
            return ;;
        bench)
            case $prev in
                --compare) COMPREPLY=($(compgen -W "bwrap" -- "$cur")) ;;
                --runs|--warmup) ;;
                *) COMPREPLY=($(compgen -W "--runs --warmup --json --compare --help" -- "$cur")) ;;
            esac
            return ;;
    esac
    local serve_opts=""
    if [[ ${words[1]} == serve ]]; then
        serve_opts="--port --ready-pattern --ready-timeout --detach --net-backend"
        case $prev in
            --net-backend) COMPREPLY=($(compgen -W "userspace veth" -- "$cur")); return ;;
            --port|--ready-pattern|--ready-timeout) return ;;
        esac
    fi
    case $prev in
        --worktree|--rootfs|--workdir) _stockade_files -d; return ;;
        --result|--mount) _stockade_files; return ;;
        --profile) COMPREPLY=($(compgen -W "held-test build dev-server" -- "$cur")); _stockade_files json; return ;;
        --stdin) COMPREPLY=($(compgen -W "null inherit" -- "$cur")); return ;;
        --require) COMPREPLY=($(compgen -W "memory pids cpu_time landlock seccomp user_ns net_ns" -- "$cur")); return ;;
        --env) COMPREPLY=($(compgen -e -- "$cur")); return ;;
        --memory|--pids|--cpu-time|--timeout|--output-limit|--tmp-size|--user|--name|--allow-secret) return ;;
        --held) _stockade_files -d; return ;;
        --expect|--verdict) _stockade_files; return ;;
        --report) COMPREPLY=($(compgen -W "junit tap" -- "$cur")); return ;;
        --log-level) COMPREPLY=($(compgen -W "error info debug" -- "$cur")); return ;;
    esac
    local extra="$serve_opts"
    if [[ ${words[1]} == oracle ]]; then
        extra="--held --report --expect --verdict"
        run_opts=${run_opts/--result /}
    fi
    COMPREPLY=($(compgen -W "$run_opts $extra --" -- "$cur"))
}
complete -F _stockade stockade
