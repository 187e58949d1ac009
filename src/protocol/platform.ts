import { InputError } from './errors';
import { truncate } from './address';

/** A target platform: Go's GOOS and GOARCH, as Terraform names them. */
export interface Platform {
  os: string;
  arch: string;
}

const TOKEN_PATTERN = /^[a-z0-9]{1,32}$/;

/** GOOS values Go can build providers for; the publish step refuses others (typos such as "linx"). */
export const KNOWN_OS = [
  'aix',
  'android',
  'darwin',
  'dragonfly',
  'freebsd',
  'illumos',
  'ios',
  'js',
  'linux',
  'netbsd',
  'openbsd',
  'plan9',
  'solaris',
  'wasip1',
  'windows',
] as const;
/** GOARCH values. */
export const KNOWN_ARCH = [
  '386',
  'amd64',
  'arm',
  'arm64',
  'loong64',
  'mips',
  'mips64',
  'mips64le',
  'mipsle',
  'ppc64',
  'ppc64le',
  'riscv64',
  's390x',
  'wasm',
] as const;

/**
 * Parses an os and arch from a request path: lower-cases them and throws
 * InputError unless each is 1–32 letters or digits. Does not require a known
 * GOOS/GOARCH (a request for an unknown one is simply not found).
 */
export function parsePlatform(os: string, arch: string): Platform {
  const platform = { os: os.toLowerCase(), arch: arch.toLowerCase() };
  if (!TOKEN_PATTERN.test(platform.os)) throw new InputError(`os "${truncate(os)}" is not a valid platform name`);
  if (!TOKEN_PATTERN.test(platform.arch)) throw new InputError(`arch "${truncate(arch)}" is not a valid platform name`);
  return platform;
}

/**
 * Parses "os_arch" (as in file names, mirror documents and --binary) and
 * requires a known GOOS and GOARCH. Throws InputError naming the bad part.
 */
export function parsePlatformName(name: string): Platform {
  const match = /^([a-z0-9]+)_([a-z0-9]+)$/.exec(name);
  if (!match) throw new InputError(`platform "${truncate(name)}" must look like os_arch, e.g. linux_amd64`);
  const platform = { os: match[1]!, arch: match[2]! };
  if (!(KNOWN_OS as readonly string[]).includes(platform.os)) {
    throw new InputError(`platform "${name}": unknown os "${platform.os}" (expected one of ${KNOWN_OS.join(', ')})`);
  }
  if (!(KNOWN_ARCH as readonly string[]).includes(platform.arch)) {
    throw new InputError(`platform "${name}": unknown arch "${platform.arch}" (expected one of ${KNOWN_ARCH.join(', ')})`);
  }
  return platform;
}

export function platformName(platform: Platform): string {
  return `${platform.os}_${platform.arch}`;
}
