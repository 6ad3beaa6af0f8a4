import QRCode from 'qrcode';

/** A QR code drawn with block characters, small enough for an ordinary terminal. */
export function terminalQr(text: string): Promise<string> {
  return QRCode.toString(text, { type: 'terminal', small: true, errorCorrectionLevel: 'L' });
}
