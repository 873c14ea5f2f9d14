// Web Push in this browser: the service worker (src/sw/sw.template.js, served as /sw.js) is
// registered at start; "Notify this device" asks the person's permission, subscribes with the
// server's VAPID key and gives the server the subscription (Settings → Devices).
import { api } from './api/client';

/** Whether this browser can receive pushes at all (a secure context with the Push API). */
export function pushSupported(): boolean {
  return typeof window !== 'undefined' && window.isSecureContext && 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

/** Registers the service worker (the app shell offline, pushes shown). Built app only: the
 * dev server's modules are not a shell to keep. */
export function registerServiceWorker(): void {
  if (!import.meta.env.PROD || !('serviceWorker' in navigator) || !window.isSecureContext) return;
  navigator.serviceWorker.register('/sw.js').catch((error: unknown) => console.warn('the service worker was not registered', error));
}

/** base64url → bytes, as `applicationServerKey` takes them. */
export function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const base64 = base64url.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(base64url.length / 4) * 4, '=');
  const binary = atob(base64);
  const bytes = new Uint8Array(new ArrayBuffer(binary.length));
  for (let index = 0; index < binary.length; index += 1) bytes[index] = binary.charCodeAt(index);
  return bytes;
}

/** A name the person recognises in the list of devices: the browser and the system. */
export function deviceLabel(userAgent: string): string {
  const browser = /Edg\//.test(userAgent) ? 'Edge' : /Firefox\//.test(userAgent) ? 'Firefox' : /Chrome\/|Chromium\//.test(userAgent) ? 'Chrome' : /Safari\//.test(userAgent) ? 'Safari' : 'A browser';
  const system = /Android/.test(userAgent) ? 'Android' : /iPhone|iPad/.test(userAgent) ? 'iOS' : /Mac OS X/.test(userAgent) ? 'macOS' : /Windows/.test(userAgent) ? 'Windows' : /Linux/.test(userAgent) ? 'Linux' : '';
  return system ? `${browser} on ${system}` : browser;
}

/** Subscribes this browser and tells the server; throws with a sentence when it cannot. */
export async function subscribeThisBrowser(): Promise<void> {
  if (!pushSupported()) throw new Error('This browser cannot receive notifications from Wright (it needs HTTPS and the Push API).');
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') throw new Error('Notifications are blocked for Wright in this browser’s settings.');
  const { public_key } = await api.pushKey();
  const registration = await navigator.serviceWorker.ready;
  const subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(public_key) });
  const json = subscription.toJSON();
  if (!json.endpoint || !json.keys?.p256dh || !json.keys?.auth) throw new Error('The browser gave an incomplete subscription.');
  await api.subscribePush({ endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth }, label: deviceLabel(navigator.userAgent) });
}
