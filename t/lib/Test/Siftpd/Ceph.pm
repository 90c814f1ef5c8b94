package Test::Siftpd::Ceph;

# Test::Siftpd::Ceph -- a Ceph cluster of the test's own for the s3
# driver: one monitor, three OSDs on memstore (each object on all three,
# writes go on with two) and radosgw, from Debian's packages that
# "auto/deps --test" unpacks into /var/cache/siftp-tests/ceph (never
# installed), in the test's directory on free 127.0.0.1 ports; a user
# with keys and a bucket; S3 reads and writes through boto3 to check
# what the cluster holds; every daemon stopped by its pid, also when the
# test dies.

use warnings;
use strict;

use IO::Socket::INET;
use POSIX qw/:sys_wait_h/;
use Time::HiRes qw/sleep time/;
use Test::More;

use Test::Siftpd qw/port/;

my $ROOT = $ENV{TEST_SIFTPD_CEPH} // '/var/cache/siftp-tests/ceph';

my @all;


# skips unless the packages are unpacked; starts the cluster in the
# test's directory and returns it, or BAIL_OUTs with the daemons' logs
sub start {
    my ($class, $t, %o) = @_;

    my ($lib) = glob("$ROOT/usr/lib/*/librados.so.2");

    plan(skip_all => "no Ceph in $ROOT (auto/deps --test)")
        unless -x "$ROOT/usr/bin/radosgw" && -x "$ROOT/usr/bin/ceph-osd"
            && -x "$ROOT/usr/bin/ceph-mon" && defined $lib;

    $lib =~ s{/librados\.so\.2$}{};

    my $self = bless {
        t => $t,
        dir => $t->testdir() . '/ceph',
        lib => $lib,
        pids => {},
        owner => $$,
        bucket => $o{bucket} // 'files',
        access => 'SIFTPCEPHACCESSKEY01',
        secret => 'siftp-ceph-secret-key-of-the-test-user-0',
        mon => port(8950),
        rgw => port(8951),
    }, $class;

    push @all, $self;

    mkdir $self->{dir} or die "mkdir $self->{dir}: $!";

    # for Ceph's programs only: boto3 and siftpd keep the system's

    $self->{env} = {
        LD_LIBRARY_PATH => join(':', $lib, "$lib/ceph",
            grep { -d } glob("$ROOT/lib/*-linux-gnu")),
        PYTHONPATH => "$ROOT/usr/lib/python3/dist-packages",
        CEPH_CONF => "$self->{dir}/ceph.conf",
    };

    $self->conf();

    $self->tool('monmaptool', '--create', '--fsid', $self->{fsid},
        '--addv', 'a', "[v2:127.0.0.1:$self->{mon}]",
        "$self->{dir}/monmap");
    $self->tool('ceph-mon', '--mkfs', '-i', 'a',
        '--monmap', "$self->{dir}/monmap");
    $self->daemon('mon', 'ceph-mon', '-i', 'a');
    $self->listening($self->{mon}, 60) or $self->broken('the monitor');

    # the OSDs made in the monitor's map, then each one's store (at once)

    my @uuid = map { uuid() } 0 .. 2;
    my $got = $self->mon_command(map { qq/{"prefix":"osd new","uuid":"$_"}/ }
        @uuid);
    $got =~ /^0 0\n0 1\n0 2\n/ or $self->broken("osd new: $got");

    my @mkfs;
    for my $id (0 .. 2) {
        mkdir "$self->{dir}/osd.$id" or die "mkdir osd.$id: $!";
        push @mkfs, $self->daemon("mkfs$id", 'ceph-osd', '-i', $id, '--mkfs',
            '--osd-uuid', $uuid[$id]);
    }
    for my $id (0 .. 2) {
        waitpid(delete $self->{pids}{"mkfs$id"}, 0);
        $self->broken("the store of osd.$id") if $?;
    }

    $self->daemon("osd$_", 'ceph-osd', '-i', $_) for 0 .. 2;

    # radosgw makes its pools, which need the OSDs, then listens

    $self->daemon('rgw', 'radosgw', '-n', 'client.rgw');
    $self->listening($self->{rgw}, 180) or $self->broken('radosgw');

    $self->tool('radosgw-admin', 'user', 'create', '--uid', 'siftp',
        '--display-name', 'siftp', '--access-key', $self->{access},
        '--secret', $self->{secret});

    $self->s3('mb') =~ /^ok$/m or $self->broken("bucket $self->{bucket}");

    return $self;
}

# a daemon's log ("client.rgw", "osd.0", "mon.a")
sub log_of {
    my ($self, $name) = @_;

    open my $fh, '<', "$self->{dir}/$name.log" or return '';
    local $/;
    return <$fh> // '';
}

sub endpoint { "http://127.0.0.1:$_[0]->{rgw}" }
sub access { $_[0]->{access} }
sub secret { $_[0]->{secret} }
sub bucket { $_[0]->{bucket} }
sub pid { $_[0]->{pids}{$_[1]} }

sub uuid {
    open my $fh, '<', '/proc/sys/kernel/random/uuid' or die "uuid: $!";
    my $u = <$fh>;
    chomp $u;
    return $u;
}

sub conf {
    my ($self) = @_;
    my $d = $self->{dir};
    my $l = $self->{lib};

    $self->{fsid} = uuid();

    # "$name" is Ceph's: each daemon's own name; memstore keeps the
    # objects in memory, 1 GiB each; size 3, min_size 2 on one host

    open my $fh, '>', "$d/ceph.conf" or die "ceph.conf: $!";
    print $fh <<"EOF";
[global]
fsid = $self->{fsid}
mon host = [v2:127.0.0.1:$self->{mon}]
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
ms mon client mode = crc secure
auth cluster required = none
auth service required = none
auth client required = none
run dir = $d
crash dir = $d/crash
log file = $d/\$name.log
admin socket = $d/\$name.asok
mon cluster log file = $d/cluster.log
erasure code dir = $l/ceph/erasure-code
plugin dir = $l/ceph
osd class dir = $l/rados-classes
osd pool default size = 3
osd pool default min size = 2
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
osd crush initial weight = 1
mon data avail warn = 1
mon data avail crit = 1

[mon]
mon data = $d/\$name
mon osd min down reporters = 1

[osd]
osd data = $d/\$name
osd objectstore = memstore
memstore device bytes = 1073741824
osd heartbeat interval = 1
osd heartbeat grace = 5

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$self->{rgw}
rgw data = $d/rgw
rgw thread pool size = 64
rgw dynamic resharding = false
rgw enable usage log = false
EOF
    close $fh;
}

sub broken {
    my ($self, $what) = @_;
    my $logs = '';

    for my $f (sort glob("$self->{dir}/*.log $self->{dir}/*.out")) {
        open my $fh, '<', $f or next;
        my @l = <$fh>;
        $logs .= "== $f\n" . join('', @l > 30 ? @l[-30 .. -1] : @l);
    }

    $self->stop();
    BAIL_OUT("Ceph: $what did not start\n$logs");
}

# a tool of the packages run to its end, at most 120 s; its output
sub tool {
    my ($self, $prog, @args) = @_;

    my $out = $self->run(120, 1, "$ROOT/usr/bin/$prog", @args);
    $self->broken("$prog @args: $out") if $?;

    return $out;
}

# commands to the monitor (JSON, as the "ceph" command sends them), by
# Python's rados module in one process: a line "RET OUTPUT" for each
sub mon_command {
    my ($self, @cmds) = @_;
    my $py = "$self->{dir}/mon.py";

    unless (-f $py) {
        open my $fh, '>', $py or die "$py: $!";
        print $fh <<'PY';
import rados, sys
c = rados.Rados(conffile=sys.argv[1])
c.connect(timeout=60)
for cmd in sys.argv[2:]:
    ret, out, err = c.mon_command(cmd, b'', timeout=60)
    print(ret, (out.decode() or err).strip().replace('\n', ' '))
c.shutdown()
PY
        close $fh;
    }

    return $self->run(120, 1, 'python3', $py, "$self->{dir}/ceph.conf",
        @cmds);
}

# a command run to its end, at most $secs, with Ceph's environment when
# $own; its output
sub run {
    my ($self, $secs, $own, @cmd) = @_;

    my $pid = open(my $fh, '-|');
    die "fork: $!" unless defined $pid;

    if ($pid == 0) {
        @ENV{keys %{$self->{env}}} = values %{$self->{env}} if $own;
        open STDERR, '>&', \*STDOUT;
        exec('timeout', $secs, @cmd) or POSIX::_exit(127);
    }

    local $/;
    my $out = <$fh> // '';
    close $fh;

    return $out;
}

# a daemon in the foreground (or a tool), its output in NAME.out
sub daemon {
    my ($self, $name, $prog, @args) = @_;

    my $pid = fork();
    die "fork: $!" unless defined $pid;

    if ($pid == 0) {
        open STDOUT, '>', "$self->{dir}/$name.out" or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT;
        @ENV{keys %{$self->{env}}} = values %{$self->{env}};
        exec("$ROOT/usr/bin/$prog", '-f', @args) or POSIX::_exit(127);
    }

    return $self->{pids}{$name} = $pid;
}

sub listening {
    my ($self, $port, $secs) = @_;

    my $end = time() + $secs;

    while (time() < $end) {
        return 1 if IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port");
        return 0 if grep { waitpid($_, WNOHANG) == $_ }
            values %{$self->{pids}};
        sleep 0.2;
    }

    return 0;
}

# SIGKILL to a daemon ("osd1"), reaped
sub kill_daemon {
    my ($self, $name) = @_;

    my $pid = delete $self->{pids}{$name} or return 0;
    kill 'KILL', $pid;
    waitpid($pid, 0);

    return 1;
}

# S3 through boto3 with the user's keys: "mb" (makes the bucket), "get
# KEY FILE ..." (for each key 200, the bytes in FILE, or the status),
# "size KEY",
# "put KEY FILE", "badmd5 KEY" (a PUT whose Content-MD5 is not its
# body's: the status), "uploads" (multipart uploads in progress); its
# output
sub s3 {
    my ($self, @args) = @_;

    my $out = $self->run(120, 0, $self->s3_command(@args));
    chomp $out;

    return $out;
}

# the command line of s3(), for a test's own scripts
sub s3_command {
    my ($self, @args) = @_;
    my $py = "$self->{dir}/s3.py";

    unless (-f $py) {
        open my $fh, '>', $py or die "$py: $!";
        print $fh <<'PY';
import boto3, botocore, botocore.config, sys
endpoint, access, secret, bucket, what = sys.argv[1:6]
a = sys.argv[6:]
c = boto3.client('s3', endpoint_url=endpoint, aws_access_key_id=access,
                 aws_secret_access_key=secret, region_name='us-east-1',
                 config=botocore.config.Config(
                     request_checksum_calculation='when_required',
                     response_checksum_validation='when_required',
                     retries={'max_attempts': 1}))
try:
    if what == 'mb':
        c.create_bucket(Bucket=bucket)
        print('ok')
    elif what == 'get':
        for key, path in zip(a[0::2], a[1::2]):
            try:
                body = c.get_object(Bucket=bucket, Key=key)['Body']
                open(path, 'wb').write(body.read())
                print('200')
            except botocore.exceptions.ClientError as e:
                print(e.response['ResponseMetadata']['HTTPStatusCode'])
    elif what == 'size':
        print(c.head_object(Bucket=bucket, Key=a[0])['ContentLength'])
    elif what == 'put':
        c.put_object(Bucket=bucket, Key=a[0], Body=open(a[1], 'rb').read())
        print('ok')
    elif what == 'badmd5':
        c.put_object(Bucket=bucket, Key=a[0], Body=b'body',
                     ContentMD5='1B2M2Y8AsgTpgAmY7PhCfg==')
        print('200')
    elif what == 'uploads':
        print(len(c.list_multipart_uploads(Bucket=bucket)
                  .get('Uploads', [])))
except botocore.exceptions.ClientError as e:
    print(e.response['ResponseMetadata']['HTTPStatusCode'])
PY
        close $fh;
    }

    return ('python3', $py, $self->endpoint(), $self->{access},
        $self->{secret}, $self->{bucket}, @args);
}

# every daemon ended by SIGKILL (memstore keeps nothing worth a clean
# stop, and the OSDs would wait for the monitor) and reaped
sub stop {
    my ($self) = @_;

    return unless $self->{owner} == $$;

    my @pids = values %{$self->{pids}};
    $self->{pids} = {};

    kill 'KILL', @pids;
    waitpid($_, 0) for @pids;
}

END {
    local $?;
    $_->stop() for @all;
}

1;
