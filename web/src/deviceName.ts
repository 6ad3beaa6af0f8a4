/**
 * The name a phone registers under, until the user renames it. Used only when registering, so it
 * loads with that (a chunk), not with the app.
 */
/** A name the user can change: the device and the browser, e.g. "iPhone Safari", "Android Chrome". */
export function defaultDeviceName(userAgent: string): string {
  const ua = userAgent;
  const device = /iPhone/.test(ua)
    ? 'iPhone'
    : /iPad/.test(ua) || (/Macintosh/.test(ua) && /Mobile\//.test(ua))
      ? 'iPad'
      : /Android/.test(ua)
        ? 'Android'
        : /Windows/.test(ua)
          ? 'Windows'
          : /Macintosh|Mac OS X/.test(ua)
            ? 'Mac'
            : /CrOS/.test(ua)
              ? 'Chromebook'
              : /Linux/.test(ua)
                ? 'Linux'
                : 'Phone';
  // Order matters: Edge and Opera say Chrome too, Chrome says Safari, iOS browsers say Safari.
  const browser = /Edg(A|iOS)?\//.test(ua)
    ? 'Edge'
    : /OPR\/|Opera/.test(ua)
      ? 'Opera'
      : /Firefox\/|FxiOS\//.test(ua)
        ? 'Firefox'
        : /SamsungBrowser\//.test(ua)
          ? 'Samsung Internet'
          : /Chrome\/|CriOS\//.test(ua)
            ? 'Chrome'
            : /Safari\//.test(ua)
              ? 'Safari'
              : 'Browser';
  return `${device} ${browser}`;
}
