/*
 * bench/ftp_floor.c -- the least an FTP server can do for the small-file
 * rows: one process, blocking calls, one session at a time, no files
 * (uploads are read and dropped, downloads are SIZE bytes from memory),
 * no logins, no checks.  The rate the bench's client reaches against it
 * is the floor that no real server can beat on the same machine: what is
 * left of each file's time is the client and the kernel's TCP work.
 *
 * ftp_floor PORT SIZE     (127.0.0.1; EPSV ports are the kernel's choice)
 *
 * Built and started by bench/bench.py for its "Ceiling: FTP small files"
 * rows; stopped by its pid.
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>


static int
reply(int c, const char *text)
{
    size_t  len = strlen(text);

    return send(c, text, len, MSG_NOSIGNAL) == (ssize_t) len ? 0 : -1;
}


/* the control connection's input not yet taken as commands */
static char    in[4096];
static size_t  len;


/* one line of the control connection, without its CRLF; -1 at its end */

static int
command(int c, char *line, size_t size)
{
    char          *nl;
    size_t         n;
    ssize_t        got;

    while ((nl = memchr(in, '\n', len)) == NULL) {
        if (len == sizeof(in)) {
            return -1;
        }

        got = recv(c, in + len, sizeof(in) - len, 0);

        if (got <= 0) {
            len = 0;
            return -1;
        }

        len += got;
    }

    n = nl - in;

    if (n > 0 && in[n - 1] == '\r') {
        n--;
    }

    if (n >= size) {
        n = size - 1;
    }

    memcpy(line, in, n);
    line[n] = '\0';

    len -= nl + 1 - in;
    memmove(in, nl + 1, len);

    return 0;
}


static int
passive(int c, int *listener)
{
    char                text[80];
    socklen_t           len = sizeof(struct sockaddr_in);
    struct sockaddr_in  sin = { .sin_family = AF_INET };

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    *listener = socket(AF_INET, SOCK_STREAM, 0);

    if (*listener == -1
        || bind(*listener, (struct sockaddr *) &sin, sizeof(sin)) == -1
        || listen(*listener, 1) == -1
        || getsockname(*listener, (struct sockaddr *) &sin, &len) == -1)
    {
        return reply(c, "425 No passive port.\r\n");
    }

    snprintf(text, sizeof(text), "229 Entering Extended Passive Mode "
             "(|||%d|)\r\n", ntohs(sin.sin_port));

    return reply(c, text);
}


static int
transfer(int c, int *listener, int upload, const char *data, size_t size)
{
    int   d;
    char  buf[65536];

    if (*listener == -1) {
        return reply(c, "425 Use EPSV first.\r\n");
    }

    d = accept(*listener, NULL, NULL);
    close(*listener);
    *listener = -1;

    if (d == -1 || reply(c, "150 Ok.\r\n") == -1) {
        return -1;
    }

    if (upload) {
        while (recv(d, buf, sizeof(buf), 0) > 0) { /* dropped */ }

    } else if (send(d, data, size, MSG_NOSIGNAL) != (ssize_t) size) {
        close(d);
        return reply(c, "426 Cut.\r\n");
    }

    close(d);

    return reply(c, "226 Done.\r\n");
}


static void
session(int c, const char *data, size_t size)
{
    int   one = 1, listener = -1, rc;
    char  line[512];

    len = 0;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    rc = reply(c, "220 floor\r\n");

    while (rc == 0 && command(c, line, sizeof(line)) == 0) {

        if (strncmp(line, "EPSV", 4) == 0) {
            rc = passive(c, &listener);

        } else if (strncmp(line, "STOR ", 5) == 0
                   || strncmp(line, "RETR ", 5) == 0)
        {
            rc = transfer(c, &listener, line[0] == 'S', data, size);

        } else if (strncmp(line, "QUIT", 4) == 0) {
            (void) reply(c, "221 Bye.\r\n");
            break;

        } else if (strncmp(line, "USER", 4) == 0) {
            rc = reply(c, "230 Ok.\r\n");

        } else if (strncmp(line, "CWD", 3) == 0) {
            rc = reply(c, "250 Ok.\r\n");

        } else if (strncmp(line, "MKD", 3) == 0) {
            rc = reply(c, "257 \"/\" Ok.\r\n");

        } else {
            rc = reply(c, "200 Ok.\r\n");
        }
    }

    if (listener != -1) {
        close(listener);
    }

    close(c);
}


int
main(int argc, char **argv)
{
    int                 ls, c, one = 1;
    char               *data;
    size_t              size;
    struct sockaddr_in  sin = { .sin_family = AF_INET };

    if (argc != 3) {
        fprintf(stderr, "usage: ftp_floor PORT SIZE\n");
        return 2;
    }

    size = strtoul(argv[2], NULL, 10);
    data = calloc(1, size ? size : 1);

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(atoi(argv[1]));

    ls = socket(AF_INET, SOCK_STREAM, 0);

    if (data == NULL || ls == -1
        || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1
        || bind(ls, (struct sockaddr *) &sin, sizeof(sin)) == -1
        || listen(ls, 16) == -1)
    {
        perror("ftp_floor");
        return 1;
    }

    for ( ;; ) {
        c = accept(ls, NULL, NULL);

        if (c != -1) {
            session(c, data, size);
        }
    }
}
