# once: the program of a pod of runtime/kube and of a pooled container of
# runtime/docker (internal/once, code.go).
# Assemble with: as -o once.o once.s && objcopy -O binary -j .text once.o once.bin
# TestCode checks that code is what this file assembles to.
#
# It serves exactly one call, read from stdin (the container's, kept open
# across attach sessions):
#
#   u32 n                  little endian, 21 <= n <= 1 MiB
#   n bytes                a 16-byte nonce, u32 argc >= 1, then argc strings
#                          (argv) and the environment's (NAME=value), each
#                          NUL-terminated
#   one byte               go: sent once ccrun has read the ack
#   frames of stdin        u32 len, len bytes; len 0 ends the call's stdin
#
# Once it has the request it writes an ack, the nonce and 0xffffffff, on
# stdout and on stderr, again every 100 ms until the go byte comes (30 s at
# most): ccrun sends the go byte only when an ack came back on each, so
# that its sessions are known to receive all the program writes (the
# runtime may add an attach session's output after it passes on its
# input, and an ack before that is lost).
#
# It forks the program (stdin a pipe, stdout and stderr the container's;
# its environment once's own with the request's strings added, each
# replacing once's of the same name, as an exec into a container has it;
# an argv[0] without a '/' looked for in that environment's PATH, or
# docker's default PATH, as execvp does) and a copier (the frames into
# that pipe), waits
# for the program, writes the nonce and the u32 wait status to stdout and
# to stderr (the trailer ccrun looks for: in each stream after all the
# program wrote to it), kills the copier, and reads stdin until the done
# token comes, 0xff and the nonce: ccrun sends it once both trailers came
# (10 s at most between reads, or the end of stdin, and it goes on without
# it). Then it exits as the program did (128+signal when it was killed):
# its exit ends the container, and with it every process the program left.
# Only then: the runtime tears the streams down as the container ends, and
# what was still on its way to ccrun would be lost. A bad request exits
# 126. A program that cannot be executed exits 127, and its trailer's
# status is then 0x7f | errno<<8 (the errno of execve, sent back on a
# close-on-exec pipe): a wait status with 0x7f low, "stopped", is one
# wait4 without WUNTRACED never gives.
.intel_syntax noprefix
.globl _start
_start:
	mov rax, [rsp]                  # argc
	lea r14, [rsp+rax*8+16]         # r14 = envp
	sub rsp, 32                     # [rsp]: n, then the pipe's two fds; [rsp+8]: a frame's length;
	                                # [rsp+16]: the errno pipe's two fds; [rsp+24]: execve's errno
	mov rsi, rsp
	mov edx, 4
	call readfull
	test eax, eax
	jnz fail
	mov ebx, [rsp]                  # rbx = n
	cmp rbx, 21
	jb fail
	cmp rbx, 0x100000
	ja fail
	xor ecx, ecx                    # rcx = how many strings its own environment has
count:
	cmp qword ptr [r14+rcx*8], 0
	je counted
	inc rcx
	jmp count
counted:
	# mmap(NULL, 9n+8k+64K+80, RW, PRIVATE|ANONYMOUS): 64K of copy buffer
	# (and the trailer, and a path being tried), the request, the pointers
	# to its strings and to the k of once's environment.
	lea rsi, [rbx+rbx*8]
	lea rsi, [rsi+rcx*8+0x10050]
	xor edi, edi
	mov edx, 3
	mov r10d, 0x22
	mov r8, -1
	xor r9d, r9d
	mov eax, 9                      # SYS_mmap
	syscall
	cmp rax, -4096
	ja fail
	mov r12, rax                    # r12 = the buffer
	lea r13, [r12+0x10000]          # r13 = the request
	mov rsi, r13
	mov rdx, rbx
	call readfull
	test eax, eax
	jnz fail
	lea rbp, [r13+rbx+23]
	and rbp, -8                     # rbp = argv, past the request and a zero pad
	mov r8d, [r13+16]               # r8 = argv strings still to come
	test r8, r8
	jz fail                         # no program
	lea rsi, [r13+20]
	lea rdx, [r13+rbx]
	mov rdi, rbp
	xor r9d, r9d                    # r9 = the environment's pointers, once argv is done
scan:                                   # a pointer to each string
	cmp rsi, rdx
	jae scandone
	test r8, r8
	jnz ptr
	test r9, r9
	jnz ptr
	mov qword ptr [rdi], 0          # argv ends; the environment begins
	add rdi, 8
	mov r9, rdi
ptr:
	mov [rdi], rsi
	add rdi, 8
	test r8, r8
	jz str
	dec r8
str:
	cmp rsi, rdx
	jae scandone
	lodsb
	test al, al
	jnz str
	jmp scan
scandone:
	test r8, r8
	jnz fail                        # fewer strings than argc
	test r9, r9
	jnz merge
	mov qword ptr [rdi], 0          # argv ends: the request has no environment
	add rdi, 8
	mov r9, rdi
merge:                                  # then once's own environment, but the names
	mov r15, rdi                    # the request gives: r15 = the end of its own
	mov r10, r14
own:
	mov rax, [r10]
	test rax, rax
	jz merged
	add r10, 8
	mov r11, r9
other:
	cmp r11, r15
	jae keep
	mov rsi, [r11]                  # a string of the request's
	mov rcx, rax
	add r11, 8
same:
	mov dl, [rsi]
	cmp dl, [rcx]
	jne other
	cmp dl, 0x3d                    # '=': the same name, the request's wins
	je own
	test dl, dl
	jz other
	inc rsi
	inc rcx
	jmp same
keep:
	mov [rdi], rax
	add rdi, 8
	jmp own
merged:
	mov qword ptr [rdi], 0
	mov r14, r9                     # r14 = the program's environment
	mov rax, [r13]                  # the ack: the nonce, then 0xffffffff,
	mov [r12], rax
	mov rax, [r13+8]
	mov [r12+8], rax
	mov dword ptr [r12+16], -1
	mov r15d, 300                   # acks at most (30 s)
ack:
	mov edi, 1                      # on stdout
	mov rsi, r12
	mov edx, 20
	mov eax, 1                      # SYS_write
	syscall
	mov edi, 2                      # and on stderr
	mov rsi, r12
	mov edx, 20
	mov eax, 1
	syscall
	mov dword ptr [rsp], 0          # then wait for the go byte: struct pollfd, fd 0,
	mov dword ptr [rsp+4], 1        # POLLIN
	mov rdi, rsp
	mov esi, 1
	mov edx, 100                    # 100 ms, then ack again: a session that was not yet
	mov eax, 7                      # receiving the output (SYS_poll) gets the next one
	syscall
	test rax, rax
	js fail
	jnz go
	dec r15d
	jnz ack
	jmp fail
go:
	lea rsi, [rsp+8]
	mov edx, 1
	call readfull
	test eax, eax
	jnz fail
	mov rdi, rsp
	mov eax, 22                     # SYS_pipe
	syscall
	test rax, rax
	jnz fail
	lea rdi, [rsp+16]
	mov esi, 0x80000                # O_CLOEXEC: the errno pipe ends at the program's execve
	mov eax, 293                    # SYS_pipe2
	syscall
	test rax, rax
	jnz fail
	mov eax, 57                     # SYS_fork: the program
	syscall
	test rax, rax
	js fail
	jz child
	mov r15, rax                    # r15 = its pid
	mov edi, [rsp+20]               # the errno pipe's write end is the program's alone
	mov eax, 3                      # SYS_close
	syscall
	mov eax, 57                     # SYS_fork: the copier
	syscall
	test rax, rax
	js fail
	jz copier
	mov r13, rax                    # r13 = the copier's pid (the request is no longer needed)
	mov edi, [rsp]
	mov eax, 3                      # SYS_close
	syscall
	mov edi, [rsp+4]
	mov eax, 3
	syscall
	mov dword ptr [rsp+24], 0
	mov edi, [rsp+16]               # execve's errno, or the end of the pipe: it ran
	lea rsi, [rsp+24]
	mov edx, 4
	xor eax, eax                    # SYS_read
	syscall
	mov rdi, r15
	lea rsi, [r12+16]               # the status, after the nonce
	xor edx, edx
	xor r10d, r10d
	mov eax, 61                     # SYS_wait4
	syscall
	test rax, rax
	js fail
	mov eax, [rsp+24]
	test eax, eax
	jz trailer
	shl eax, 8                      # not executed: 0x7f | errno<<8
	or eax, 0x7f
	mov [r12+16], eax
trailer:
	mov edi, 1                      # the trailer: the nonce (still there), then the status,
	mov rsi, r12
	mov edx, 20
	mov eax, 1                      # SYS_write
	syscall
	mov edi, 2                      # on stdout and on stderr, after all the program wrote to them
	mov rsi, r12
	mov edx, 20
	mov eax, 1
	syscall
	mov edi, r13d                   # the copier's frames are of no use now
	mov esi, 9
	mov eax, 62                     # SYS_kill, SIGKILL
	syscall
	mov rdi, r13
	xor esi, esi
	xor edx, edx
	xor r10d, r10d
	mov eax, 61                     # SYS_wait4
	syscall
	xor ebx, ebx                    # ebx = how much of the done token matched
await:                                  # read stdin (what is left of the frames, then the token)
	mov dword ptr [rsp], 0          # struct pollfd: fd 0,
	mov dword ptr [rsp+4], 1        # POLLIN
	mov rdi, rsp
	mov esi, 1
	mov edx, 10000                  # 10 s at most between reads
	mov eax, 7                      # SYS_poll
	syscall
	test rax, rax
	jle status                      # nothing came, or poll failed: exit anyway
	xor edi, edi
	lea rsi, [r12+64]
	mov edx, 0x8000
	xor eax, eax                    # SYS_read
	syscall
	test rax, rax
	jle status                      # end of stdin, or an error
	lea rsi, [r12+64]
	lea rcx, [rsi+rax]
match:                                  # the token: 0xff, then the nonce (hex: no 0xff in it,
	cmp rsi, rcx                    # so a plain match cannot miss it)
	jae await
	lodsb
	test ebx, ebx
	jz first
	cmp al, [r12+rbx-1]
	jne first
	inc ebx
	cmp ebx, 17
	jb match
	jmp status
first:
	xor ebx, ebx
	cmp al, 0xff
	jne match
	mov ebx, 1
	jmp match
status:
	mov eax, [r12+16]
	mov edi, 127
	cmp al, 0x7f                    # not executed
	je quit
	mov edi, eax
	and edi, 0x7f                   # the signal that killed it
	jz exited
	add edi, 128
	jmp quit
exited:
	movzx edi, ah                   # its exit status
quit:
	mov eax, 231                    # SYS_exit_group
	syscall
child:
	mov edi, [rsp]
	xor esi, esi
	mov eax, 33                     # SYS_dup2: the pipe is stdin
	syscall
	mov edi, [rsp]
	mov eax, 3
	syscall
	mov edi, [rsp+4]
	mov eax, 3
	syscall
	mov rdi, [rbp]                  # argv[0]: a path, or a name to look for in PATH
	mov rsi, rdi
slash:
	lodsb
	cmp al, 0x2f                    # '/'
	je direct
	test al, al
	jnz slash
	mov r10, r14                    # PATH, from the program's environment
path:
	mov r9, [r10]
	test r9, r9
	jz defpath
	add r10, 8
	cmp dword ptr [r9], 0x48544150  # "PATH"
	jne path
	cmp byte ptr [r9+4], 0x3d       # '='
	jne path
	add r9, 5                       # r9 = where the next directory begins
	jmp search
defpath:
	lea r9, [rip+stdpath]
search:
	xor ebx, ebx                    # ebx = EACCES met
dir:
	mov rdi, r12                    # the path tried, in the copy buffer (unused in here)
copy:
	mov al, [r9]
	test al, al
	jz dirend
	inc r9
	cmp al, 0x3a                    # ':'
	je dirend
	mov [rdi], al
	inc rdi
	lea rdx, [r12+0x8000]
	cmp rdi, rdx
	jb copy
skip:                                   # too long: the next directory
	mov al, [r9]
	test al, al
	jz tried
	inc r9
	cmp al, 0x3a
	jne skip
	jmp dir
dirend:
	movzx r15d, al                  # r15 = 0 at PATH's end
	cmp rdi, r12
	je name                         # an empty directory is the working one
	mov byte ptr [rdi], 0x2f
	inc rdi
name:
	mov rdx, [rbp]
namecopy:
	mov al, [rdx]
	mov [rdi], al
	inc rdi
	inc rdx
	lea rcx, [r12+0xffff]
	cmp rdi, rcx
	jae next
	test al, al
	jnz namecopy
	mov rdi, r12
	mov rsi, rbp
	mov rdx, r14
	mov eax, 59                     # SYS_execve
	syscall
	cmp eax, -13                    # EACCES: go on, and say so if nothing else is found
	jne notacces
	mov ebx, 1
	jmp next
notacces:
	cmp eax, -2                     # ENOENT
	je next
	cmp eax, -20                    # ENOTDIR
	jne failed
next:
	test r15d, r15d
	jnz dir
tried:
	mov eax, -2                     # ENOENT
	test ebx, ebx
	jz failed
	mov eax, -13                    # EACCES
	jmp failed
direct:
	mov rsi, rbp
	mov rdx, r14
	mov eax, 59                     # SYS_execve
	syscall
failed:
	neg eax                         # it failed: its errno to once
	mov [rsp+24], eax
	mov edi, [rsp+20]
	lea rsi, [rsp+24]
	mov edx, 4
	mov eax, 1                      # SYS_write
	syscall
	mov edi, 127
	mov eax, 231
	syscall
copier:
	mov edi, [rsp]
	mov eax, 3
	syscall
	mov r15d, [rsp+4]               # r15 = the pipe's write end
frame:
	lea rsi, [rsp+8]
	mov edx, 4
	call readfull
	test eax, eax
	jnz cexit
	mov ebx, [rsp+8]                # rbx = what is left of the frame
	test ebx, ebx
	jz cexit                        # the end of stdin
chunk:
	mov edx, 0x10000
	cmp rbx, rdx
	cmovb rdx, rbx
	xor edi, edi
	mov rsi, r12
	xor eax, eax                    # SYS_read
	syscall
	test rax, rax
	jle cexit
	sub rbx, rax
	mov rdx, rax
	mov rsi, r12
wloop:
	mov edi, r15d
	mov eax, 1                      # SYS_write (a closed pipe: SIGPIPE ends the copier)
	syscall
	test rax, rax
	jle cexit
	add rsi, rax
	sub rdx, rax
	jnz wloop
	test rbx, rbx
	jnz chunk
	jmp frame
cexit:
	xor edi, edi
	mov eax, 231
	syscall
fail:
	mov edi, 126
	mov eax, 231
	syscall
readfull:                               # read rdx bytes of fd 0 to rsi: eax 0, or 1 at EOF or error
	xor edi, edi
	xor eax, eax
	syscall
	test rax, rax
	jle rferr
	add rsi, rax
	sub rdx, rax
	jnz readfull
	xor eax, eax
	ret
rferr:
	mov eax, 1
	ret
stdpath:                                # PATH when the environment has none (docker's)
	.asciz "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
