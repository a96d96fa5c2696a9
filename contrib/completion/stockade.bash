# bash completion for stockade(1)
_stockade() {
    local cur prev words cword
    _init_completion || return
    local commands="run profile check bench oracle serve stop ps logs --help --version"
    local run_opts="--profile --worktree --mount --rootfs --env --allow-secret --workdir --user
        --name --stdin --quiet --result --memory --pids --cpu-time --timeout --output-limit
        --tmp-size --require --log-level --help"
    if [[ $cword -eq 1 ]]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return
    fi
    local i
    for ((i = 2; i < cword; i++)); do
        [[ ${words[i]} == -- ]] && { _command_offset $((i + 1)); return; }
    done
    case ${words[1]} in
        profile)
            if [[ $cword -eq 2 ]]; then
                COMPREPLY=($(compgen -W "show check secret-names" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "held-test build dev-server" -- "$cur"))
                _filedir json
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
                --profile) COMPREPLY=($(compgen -W "held-test build dev-server" -- "$cur")); _filedir json ;;
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
        --worktree|--rootfs|--workdir) _filedir -d; return ;;
        --result|--mount) _filedir; return ;;
        --profile) COMPREPLY=($(compgen -W "held-test build dev-server" -- "$cur")); _filedir json; return ;;
        --stdin) COMPREPLY=($(compgen -W "null inherit" -- "$cur")); return ;;
        --require) COMPREPLY=($(compgen -W "memory pids cpu_time landlock seccomp user_ns net_ns" -- "$cur")); return ;;
        --env) COMPREPLY=($(compgen -e -- "$cur")); return ;;
        --memory|--pids|--cpu-time|--timeout|--output-limit|--tmp-size|--user|--name|--allow-secret) return ;;
        --held) _filedir -d; return ;;
        --expect|--verdict) _filedir; return ;;
        --report) COMPREPLY=($(compgen -W "junit tap" -- "$cur")); return ;;
        --log-level) COMPREPLY=($(compgen -W "error info debug" -- "$cur")); return ;;
    esac
    local extra="$serve_opts"
    [[ ${words[1]} == oracle ]] && extra="--held --report --expect --verdict"
    COMPREPLY=($(compgen -W "$run_opts $extra --" -- "$cur"))
}
complete -F _stockade stockade
