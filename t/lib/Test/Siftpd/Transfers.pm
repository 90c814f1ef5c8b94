package Test::Siftpd::Transfers;

# Test::Siftpd::Transfers -- many transfers in flight at once for the
# process tests (upgrade, a killed worker, reloads): each a curl of its own
# over FTP, FTPS or SFTP, slowed by alice's upload and download rates:
# downloads and uploads of three source files in alice's home; started,
# seen midway, checked byte for byte when they end.

use warnings;
use strict;

# siftpd.conf: two workers, an FTP server on %%PORT_8021%% (with the
# directives $o{ftp}) and an SFTP server on %%PORT_8022%%, both on
# data/, no limit of connections per address
sub conf {
    my ($t, %o) = @_;

    mkdir $t->testdir() . '/data';
    mkdir $t->testdir() . '/data/alice';

    $t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 256; }
users %%TESTDIR%%/users;
max_connections_per_address 1000;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        storage local;
        data_timeout 60s;
@{[ $o{ftp} // '' ]}
    }
}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
EOF
}

# new($t, n => count, protos => [qw/ftp ftps sftp/], ftp => port,
# sftp => port, key => private key for SFTP, size => bytes, rate => bytes/s):
# the source files are written here, into data/alice/, and alice's rates
# into the users file: before the server starts
sub new {
    my ($class, $t, %o) = @_;
    my $d = $t->testdir();

    my $self = bless { t => $t, size => 2 * 1024 * 1024,
        rate => 200 * 1024, protos => [qw/ftp ftps sftp/], %o }, $class;

    mkdir "$d/down";

    for my $n (0 .. 2) {
        open my $fh, '>', "$d/data/alice/src$n.bin" or die "src$n: $!";
        print $fh pack('N', $_ * 7919 + $n) x 256
            for 1 .. $self->{size} / 1024;
        close $fh;
    }

    my $users = $t->read_file('users');
    my $r = $self->{rate};
    $users =~ s/^\[alice\]\n/[alice]\nupload_rate = $r\ndownload_rate = $r\n/m
        or die 'no user alice';
    $t->write_file('users', $users);

    return $self;
}

# starts them all: transfer i runs protocol i mod (number of protocols),
# uploads and downloads alternate per round of protocols
sub start {
    my ($self) = @_;
    my $d = $self->{t}->testdir();
    my @protos = @{$self->{protos}};
    my $curl = 'curl -sS --max-time 120 --insecure';

    $self->{running} = {};
    $self->{list} = [];

    for my $i (0 .. $self->{n} - 1) {
        my $proto = $protos[$i % @protos];
        my $up = int($i / @protos) % 2;
        my $src = 'src' . ($i % 3) . '.bin';
        my ($url, $auth);

        if ($proto eq 'sftp') {
            $url = "sftp://127.0.0.1:$self->{sftp}/";
            $auth = "-u alice: --key $self->{key} --pubkey $self->{key}.pub";
        } else {
            $url = "ftp://127.0.0.1:$self->{ftp}/";
            $auth = '-u alice:pw-a' . ($proto eq 'ftps' ? ' --ssl-reqd' : '');
        }

        my $cmd = $up ? "$curl $auth -T $d/data/alice/$src ${url}up$i.bin"
                      : "$curl $auth -o $d/down/down$i.bin $url$src";

        my $pid = fork() // die "fork: $!";
        if ($pid == 0) {
            open STDOUT, '>', "$d/curl$i.out";
            open STDERR, '>&', \*STDOUT;
            exec $cmd;
            exit 127;
        }

        $self->{running}{$pid} = $i;
        push @{$self->{list}}, { proto => $proto, up => $up, src => $src,
            i => $i, pid => $pid };
    }

    return $self;
}

# the names in alice's home
sub _names {
    my ($self) = @_;

    opendir my $dh, $self->{t}->testdir() . '/data/alice' or return ();
    my @n = readdir $dh;
    closedir $dh;

    return @n;
}

# waits until every download has bytes, and every upload a temporary file
# or bytes under its name
sub midway {
    my ($self, $timeout) = @_;
    my $d = $self->{t}->testdir();

    return $self->{t}->wait_for(sub {
        my @names = $self->_names();
        for my $x (@{$self->{list}}) {
            my $up = "up$x->{i}.bin";
            return 0 unless $x->{up}
                ? -s "$d/data/alice/$up" || grep { /^\.\Q$up\E\.sft-/ } @names
                : -s "$d/down/down$x->{i}.bin";
        }
        return 1;
    }, $timeout // 30);
}

# the transfers, as started: proto, up, src, i, pid (of the curl)
sub list { @{$_[0]->{list}} }

# the final name of transfer $x's file on the server (uploads)
sub upload_name {
    my ($self, $x) = @_;
    return $self->{t}->testdir() . "/data/alice/up$x->{i}.bin";
}

# waits for every curl; the failures, one line each, of those not in
# %$expect_fail (indexes), whose own failure is not checked
sub finish {
    my ($self, $expect_fail) = @_;
    my $t = $self->{t};
    my $d = $t->testdir();

    while (%{$self->{running}}) {
        my $pid = waitpid(-1, 0);
        last if $pid <= 0;
        my $i = delete $self->{running}{$pid} // next;
        $self->{list}[$i]{rc} = $? >> 8;
    }

    my @bad;
    for my $x (@{$self->{list}}) {
        next if $expect_fail && $expect_fail->{$x->{i}};
        my $got = $x->{up} ? $self->upload_name($x)
                           : "$d/down/down$x->{i}.bin";
        next if defined $x->{rc} && $x->{rc} == 0
            && system('cmp', '-s', "$d/data/alice/$x->{src}", $got) == 0;
        push @bad, "$x->{proto} " . ($x->{up} ? 'upload' : 'download')
            . " $x->{i}: curl " . ($x->{rc} // '?') . ' '
            . $t->read_file("curl$x->{i}.out");
    }

    return @bad;
}

1;
