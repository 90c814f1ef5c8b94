package Test::Siftpd::HAProxy;

# Test::Siftpd::HAProxy -- Debian's HAProxy in front of the siftpd of a
# test: its binary, and one started in the foreground on a configuration
# of the test directory, its output in haproxy.out there; or one written
# for FTP nodes (the control port balanced round-robin, each node's
# passive range forwarded to it, PROXY protocol v2 everywhere) and waited
# for; the test stops it by the pid this returns.

use warnings;
use strict;

use Exporter qw/import/;

use Test::Siftpd::FTP qw/ftp_connect ftp_cmd/;

our @EXPORT_OK = qw/haproxy_binary haproxy_start haproxy_ftp/;


# the haproxy binary, or undef where it is not installed
sub haproxy_binary {
    return (grep { -x } '/usr/sbin/haproxy', '/usr/bin/haproxy')[0];
}

# haproxy -db on the test directory's file $conf; its pid
sub haproxy_start {
    my ($t, $conf) = @_;
    my $d = $t->testdir();

    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', "$d/haproxy.out";
        open STDERR, '>&', \*STDOUT;
        exec haproxy_binary(), '-db', '-f', "$d/$conf";
        exit 127;
    }

    return $pid;
}

# haproxy.cfg for FTP nodes ({ addr, port, lo, hi }: the node's listener
# and passive range) on control port $ctl of 127.0.0.1, a connection to a
# node that refuses it sent to another; started, and waited for until a
# greeting comes through it to a client on 127.0.0.2: (pid, up)
sub haproxy_ftp {
    my ($t, $ctl, @nodes) = @_;

    my $conf = <<"EOF";
global
    maxconn 256
defaults
    mode tcp
    source 127.0.0.1
    retries 2
    option redispatch 1
    timeout connect 5s
    timeout client 120s
    timeout server 120s
frontend ftp
    bind 127.0.0.1:$ctl
    default_backend nodes
backend nodes
    balance roundrobin
EOF

    for my $i (1 .. @nodes) {
        my $n = $nodes[$i - 1];
        $conf .= "    server n$i $n->{addr}:$n->{port} send-proxy-v2\n";
    }

    for my $i (1 .. @nodes) {
        my $n = $nodes[$i - 1];
        $conf .= "frontend pasv$i\n    bind 127.0.0.1:$n->{lo}-$n->{hi}\n"
            . "    default_backend pasv$i\nbackend pasv$i\n"
            . "    server n$i $n->{addr} send-proxy-v2\n";
    }

    $t->write_file('haproxy.cfg', $conf);
    my $pid = haproxy_start($t, 'haproxy.cfg');

    for (1 .. 100) {
        my ($s, $g) = eval { ftp_connect($ctl, '127.0.0.2') };
        if ($s && defined $g && $g =~ /^220 /) {
            ftp_cmd($s, 'QUIT');
            close $s;
            return ($pid, 1);
        }
        select(undef, undef, undef, 0.1);
    }

    return ($pid, 0);
}

1;
