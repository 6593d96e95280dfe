/* A one-answer TCP server for tests/e2e/container_test.py: linked
   statically so that it runs inside a test image that holds no libraries.
   Usage: static_server PORT TEXT [TERM_FILE] - listens on 127.0.0.1:PORT
   and answers each connection with TEXT, then closes it; runs until
   killed. With TERM_FILE, SIGTERM appends "term" to it, then ends the
   server (exit 143): a test's ground truth that the stop reached it. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char* term_file = NULL;

static void OnTerm(int sig) {
  (void)sig;
  int fd = open(term_file, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ssize_t ignored = write(fd, "term\n", 5);
    (void)ignored;
    close(fd);
  }
  _exit(143);
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: static_server PORT TEXT [TERM_FILE]\n");
    return 2;
  }
  if (argc == 4) {
    term_file = argv[3];
    signal(SIGTERM, OnTerm);
  }
  int s = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)atoi(argv[1]));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(s, 8) != 0) {
    perror("static_server");
    return 1;
  }
  for (;;) {
    int c = accept(s, NULL, NULL);
    if (c < 0) continue;
    ssize_t ignored = write(c, argv[2], strlen(argv[2]));
    (void)ignored;
    close(c);
  }
}
