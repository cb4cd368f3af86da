# bash completion for redlock(1)                                         -*- shell-script -*-
#
# Installed as share/bash-completion/completions/redlock, where bash-completion loads it on first
# use; `redlock completion bash` prints it, so `source <(redlock completion bash)` works too. It
# needs nothing but bash itself.

# Options that take a value, and the kind of value: duration, file, signal, server, or none.
_redlock_value_kind() {
    case $1 in
        --timeout | --ttl | -w | --wait | --retry-delay | --renew | -k | --kill-after | --min-hold | --max-hold | \
            --fence-ttl)
            echo duration ;;
        --password-file | --tls-ca | --tls-cert | --tls-key | --token-file | --report)
            echo file ;;
        --signal)
            echo signal ;;
        -S | --servers)
            echo server ;;
        --user | --tls-server-name | --prefix | --token | --owner | --drift | -E | --conflict-exit-code | \
            -c | --command | --lost-exit-code | --max-terms | --limit | --slot | --member-wait | --max-queue)
            echo other ;;
        --until)
            echo until ;;
        *)
            return 1 ;;
    esac
}

# COMP_WORDBREAKS splits "redis://h:6379" and "app:" at each ":". Puts such words back together
# into WORDS, with CWORD the index of the word being completed: a ":" and the words on either side
# of it are one word when COMP_LINE has no space between them.
_redlock_words() {
    words=()
    cword=0
    local j w pos=0 joined prev_raw=
    for ((j = 0; j < ${#COMP_WORDS[@]}; j++)); do
        w=${COMP_WORDS[j]}
        joined=0
        while [[ ${COMP_LINE:pos:1} == [[:space:]] ]]; do
            pos=$((pos + 1))
            joined=-1
        done
        if [[ ${COMP_LINE:pos:${#w}} == "$w" ]]; then
            ((joined == 0)) && [[ $w == : || $prev_raw == : ]] && joined=1
            pos=$((pos + ${#w}))
        fi
        if ((joined == 1 && ${#words[@]} > 0)); then
            words[${#words[@]} - 1]+=$w
        else
            words+=("$w")
        fi
        prev_raw=$w
        ((j == COMP_CWORD)) && cword=$((${#words[@]} - 1))
    done
}

_redlock() {
    local cur prev  # set by _redlock_main (bash scopes dynamically)
    _redlock_main
    # Bash replaces only what follows the last ":" of the word: answer with that part.
    if [[ $cur == *:* ]]; then
        local head=${cur%"${cur##*:}"} k
        for k in "${!COMPREPLY[@]}"; do COMPREPLY[k]=${COMPREPLY[k]#"$head"}; done
    fi
    return 0
}

_redlock_main() {
    local -a words
    local cword
    _redlock_words
    cur=${words[cword]}
    prev=
    ((cword > 0)) && prev=${words[cword - 1]}
    # "--ttl=5" is split at the "=" (it is in COMP_WORDBREAKS): complete the value after it.
    if [[ $cur == = ]]; then
        cur=
    elif [[ $prev == = ]] && ((cword > 1)); then
        prev=${words[cword - 2]}
    fi

    local global_opts="-S --servers --timeout --member-wait --password-file --user --tls-ca --tls-cert --tls-key
        --tls-server-name --tls-insecure --json -v --verbose -q --quiet --prefix -h --help -V --version"
    local commands="acquire extend release status run elect doctor list watch completion"
    local acquire_opts="--ttl -n --nonblock -w --wait -E --conflict-exit-code --token --token-file
        --retry-delay --drift --owner --limit --shared --no-writer-priority --fair --max-queue --fence-ttl"
    local run_opts="$acquire_opts -c --command --renew --signal -k --kill-after --lost-exit-code --report
        --min-hold --max-hold"
    local elect_opts="$run_opts --once --max-terms --observe"

    # Find the command, how many words follow it, and where run's (or elect's) "--" is.
    local i=1 word cmd= args=0 dashdash=0
    while ((i < cword)); do
        word=${words[i]}
        if [[ ($cmd == run || $cmd == elect) && $word == -- ]]; then
            dashdash=$i
            break
        fi
        case $word in
            --*=*) ;;
            -*)
                if _redlock_value_kind "$word" >/dev/null; then
                    # The value is the next word, or the one after a split-off "=".
                    if [[ ${words[i + 1]} == = ]]; then i=$((i + 1)); fi
                    i=$((i + 1))
                fi
                ;;
            *)
                if [[ -z $cmd ]]; then
                    cmd=$word
                else
                    args=$((args + 1))
                fi
                ;;
        esac
        i=$((i + 1))
    done

    # run/elect NAME -- CMD [ARG...]: a command name first, then whatever that command takes.
    if ((dashdash > 0)); then
        if ((cword == dashdash + 1)); then
            mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        else
            compopt -o default 2>/dev/null
            COMPREPLY=()
        fi
        return 0
    fi

    local kind
    if kind=$(_redlock_value_kind "$prev"); then
        case $kind in
            duration)
                mapfile -t COMPREPLY < <(compgen -W "100ms 250ms 500ms 1s 2s 5s 10s 30s 1m 5m 15m 1h" -- "$cur") ;;
            file)
                compopt -o filenames 2>/dev/null
                mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
            signal)
                mapfile -t COMPREPLY < <(compgen -W "TERM INT HUP QUIT KILL USR1 USR2 ALRM CONT STOP ABRT PIPE
                    WINCH" -- "${cur^^}") ;;
            until)
                mapfile -t COMPREPLY < <(compgen -W "released free" -- "$cur") ;;
            server)
                compopt -o nospace 2>/dev/null
                mapfile -t COMPREPLY < <(compgen -W "redis:// rediss:// unix://" -- "$cur") ;;
            *)
                COMPREPLY=() ;;
        esac
        return 0
    fi

    local opts=$global_opts
    case $cmd in
        acquire) opts+=" $acquire_opts" ;;
        extend) opts+=" --token --ttl --limit --slot --shared" ;;
        release) opts+=" --token --force --limit --slot --shared" ;;
        status) opts+=" --limit --shared" ;;
        run) opts+=" $run_opts" ;;
        elect) opts+=" $elect_opts" ;;
        doctor) opts+=" --ttl" ;;
        watch) opts+=" --until" ;;
    esac

    if [[ $cur == -* ]]; then
        [[ ($cmd == run || $cmd == elect) && $args -ge 1 ]] && opts+=" --"
        mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
    elif [[ -z $cmd ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
    elif [[ $cmd == completion && $args -eq 0 ]]; then
        mapfile -t COMPREPLY < <(compgen -W "bash zsh" -- "$cur")
    else
        # NAME is the user's own: nothing to suggest.
        COMPREPLY=()
    fi
    return 0
}

complete -F _redlock redlock
