/* The least a lock client can do per server: the reference of the bench's scale row.
 *
 *     floor KEY PORT...     SET KEY tok NX PX 30000 on 127.0.0.1:PORT for every PORT
 *     floor -KEY PORT...    DEL KEY on each
 *
 * One fresh TCP connection per server, the request sent as soon as connect returns, every answer
 * awaited in one poll loop, then exit: what any one-shot client of N servers pays to the kernel
 * and the servers, without redlock's Lua scripts, INFO, fence, validity or output. Exit 0 when a
 * majority answered +OK (or an integer, for DEL), 1 when not, 2 on a system error, 3 after 2 s
 * without every answer. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kMaxServers = 64 };

int main(int argc, char** argv) {
  if (argc < 3 || argc - 2 > kMaxServers) {
    fprintf(stderr, "usage: floor [-]KEY PORT... (at most %d ports)\n", kMaxServers);
    return 2;
  }
  const char* key = argv[1];
  const int del = key[0] == '-';
  if (del) ++key;
  char request[512];
  const int length =
      del ? snprintf(request, sizeof request, "*2\r\n$3\r\nDEL\r\n$%zu\r\n%s\r\n", strlen(key), key)
          : snprintf(request, sizeof request,
                     "*6\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$3\r\ntok\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n",
                     strlen(key), key);
  if (length <= 0 || length >= (int)sizeof request) return 2;

  const int n = argc - 2;
  struct pollfd fds[kMaxServers];
  for (int i = 0; i < n; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return 2;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((unsigned short)atoi(argv[i + 2]));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Over loopback the handshake is done when connect returns (EINPROGRESS or not). */
    connect(fd, (struct sockaddr*)&address, sizeof address);
    if (send(fd, request, (size_t)length, MSG_NOSIGNAL) != length) return 2;
    fds[i].fd = fd;
    fds[i].events = POLLIN;
  }
  int left = n, ok = 0;
  while (left > 0) {
    int ready = poll(fds, (nfds_t)n, 2000);
    if (ready == 0) return 3;
    if (ready < 0) return 2;
    for (int i = 0; i < n; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char reply[256];
      ssize_t got = read(fds[i].fd, reply, sizeof reply);
      if (got > 0 && (reply[0] == '+' || reply[0] == ':')) ++ok;
      fds[i].fd = -1;
      --left;
    }
  }
  return ok >= n / 2 + 1 ? 0 : 1;
}
