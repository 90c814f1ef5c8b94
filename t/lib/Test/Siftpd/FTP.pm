package Test::Siftpd::FTP;

# Test::Siftpd::FTP -- what the FTP tests share: a configuration with one
# FTP server on the posix storage, users added with "siftpd user add", and
# a raw control connection (connect, one command and its whole reply,
# login, a passive transfer of one command, an upload left running).

use warnings;
use strict;

use Exporter qw/import/;
use IO::Socket::INET;

our @EXPORT_OK = qw/ftp_conf ftp_user ftp_connect ftp_cmd ftp_login
                    ftp_passive ftp_upload_start/;


# siftpd.conf: one worker unless told, users, storage "local" on data/,
# one FTP server on %%PORT_8021%%; $o{main}, $o{ftp} and $o{server} are
# added at their level
sub ftp_conf {
    my ($t, %o) = @_;

    mkdir $t->testdir() . '/data';

    $t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes @{[ $o{workers} // 1 ]};
events { worker_connections @{[ $o{connections} // 64 ]}; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
@{[ $o{main} // '' ]}
ftp {
    @{[ $o{ftp} // '' ]}
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        storage local;
        @{[ $o{server} // '' ]}
    }
}
EOF
}

# a user with a home under data/ (made here) and its permissions
sub ftp_user {
    my ($t, $name, $password, $perms) = @_;
    my $d = $t->testdir();

    mkdir "$d/data/$name";
    $t->user_add($name, $password, perms => $perms);
}

# a control connection, from 127.0.0.1 or $from; (socket, greeting)
sub ftp_connect {
    my ($port, $from) = @_;

    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
        LocalAddr => $from // '127.0.0.1', Timeout => 20)
        or die "connect to $port: $!";
    my $greeting = <$s>;

    return wantarray ? ($s, $greeting) : $s;
}

# one command line and its reply, all lines of it
sub ftp_cmd {
    my ($s, $line) = @_;

    print $s "$line\r\n";

    my $r = '';
    while (defined(my $l = <$s>)) {
        $r .= $l;
        last if $l =~ /^\d{3} /;
    }

    return $r;
}

# a logged-in control connection
sub ftp_login {
    my ($port, $user, $password, $from) = @_;

    my $s = ftp_connect($port, $from);
    ftp_cmd($s, "USER $user");
    my $r = ftp_cmd($s, "PASS $password");
    die "login $user: $r" unless $r =~ /^230 /;

    return $s;
}

# EPSV, then a command that uses the data connection: what came over it
# (and what went, $send), or the reply when it did not start
sub ftp_passive {
    my ($s, $line, $send) = @_;

    my ($p) = ftp_cmd($s, 'EPSV') =~ /\(\|\|\|(\d+)\|\)/
        or return 'no EPSV';
    my $dc = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$p",
        Timeout => 20) or return 'no data connection';

    my $r = ftp_cmd($s, $line);
    return $r unless $r =~ /^150 /;

    print $dc $send if defined $send;
    shutdown($dc, 1);

    my $data = '';
    while (sysread($dc, $data, 65536, length $data)) { }
    close $dc;

    my $end = <$s> // '';
    return $end =~ /^226 / ? $data : "end: $end";
}

# an upload left running: login, EPSV, STOR $name (or $verb: APPE), $data
# sent and the data connection kept open; (control, data) sockets
sub ftp_upload_start {
    my ($port, $user, $password, $name, $data, $verb) = @_;

    $verb //= 'STOR';

    my $s = ftp_login($port, $user, $password);
    my ($p) = ftp_cmd($s, 'EPSV') =~ /\(\|\|\|(\d+)\|\)/ or die 'no EPSV';
    my $dc = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$p",
        Timeout => 20) or die "data connection: $!";
    my $r = ftp_cmd($s, "$verb $name");
    die "$verb $name: $r" unless $r =~ /^150 /;
    print $dc $data;

    return ($s, $dc);
}

1;
