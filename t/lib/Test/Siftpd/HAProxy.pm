package Test::Siftpd::HAProxy;

# Test::Siftpd::HAProxy -- Debian's HAProxy in front of the siftpd of a
# test: its binary, and one started in the foreground on a configuration
# of the test directory, its output in haproxy.out there; the test stops
# it by the pid this returns.

use warnings;
use strict;

use Exporter qw/import/;

our @EXPORT_OK = qw/haproxy_binary haproxy_start/;


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

1;
