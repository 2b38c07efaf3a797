// The console's entry point: builds the views, starts the watch feeds (keys, locks and elections
// follow them as events arrive), and reads status and metrics every few seconds (they are not
// keys: no watch carries them). Read-only: the console never writes to the cell; signing in only
// obtains a token for the API's own checks.
import { describe, getText, setToken, signIn, token } from './api.js';
import { renderCanary } from './canary-view.js';
import { CellView } from './cell-view.js';
import { ElectionsView, LeasesView, LocksView, touched } from './coordination-view.js';
import { byId } from './dom.js';
import { KeysView } from './keys-view.js';
import { parseMetrics } from './metrics.js';
import { TenantsView } from './tenants-view.js';
import { Feed } from './watch.js';

const statusEveryMs = 2000;
const leasesEveryMs = 3000;
const tenantsEveryMs = 3000;
const countdownEveryMs = 200;

/** Runs `load` once now, and again (once) soon after every request while one is running. */
function coalesced(load: () => Promise<unknown>): () => void {
  let running = false;
  let again = false;
  const run = (): void => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    void load().finally(() => {
      running = false;
      if (again) {
        again = false;
        run();
      }
    });
  };
  return run;
}

function setUpSignIn(): void {
  const form = byId<HTMLFormElement>('signin');
  const state = byId('signin-state');
  const show = (): void => void (state.textContent = token() === null ? 'no token: the connection\'s certificate or anonymous' : 'signed in with a token');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = byId<HTMLInputElement>('signin-name').value;
    const password = byId<HTMLInputElement>('signin-password').value;
    signIn(name, password).then(() => location.reload(), (error: unknown) => void (state.textContent = describe(error)));
  });
  byId('signout').addEventListener('click', () => {
    setToken(null);
    location.reload();
  });
  show();
}

function start(): void {
  setUpSignIn();
  const cell = new CellView();
  const keys = new KeysView();
  const leases = new LeasesView();
  const locks = new LocksView();
  const elections = new ElectionsView();
  const reload = { leases: coalesced(() => leases.load()), locks: coalesced(() => locks.load()), elections: coalesced(() => elections.load()) };
  const feedState = (id: string) => (text: string, ok: boolean): void => {
    const target = byId(id);
    target.textContent = text;
    target.className = ok ? 'ok' : 'bad';
  };
  // The key browser's feed follows its prefix; locks and elections have their own.
  let keysFeed: Feed | null = null;
  keys.onPrefix((prefix) => {
    keysFeed?.stop();
    keysFeed = new Feed(prefix, {
      reset: () => keys.load(),
      events: (_revision, events) => {
        keys.onEvents(events);
        if (touched(events).leases) reload.leases();
      },
      state: feedState('feed-keys'),
    });
  });
  new Feed('/locks/', { reset: () => locks.load(), events: () => { reload.locks(); reload.leases(); }, state: feedState('feed-locks') });
  new Feed('/elections/', { reset: () => elections.load(), events: () => { reload.elections(); reload.leases(); }, state: feedState('feed-elections') });
  reload.leases();
  const status = async (): Promise<void> => {
    await cell.loadStatus();
    try {
      const samples = parseMetrics(await getText('/metrics'));
      cell.onMetrics(samples);
      renderCanary(samples, cell.status, cell.router);
    } catch (error) {
      byId('watches').textContent = `metrics: ${describe(error)}`;
      byId('canary').textContent = `metrics: ${describe(error)}`;
      cell.renderMembers(null);
    }
  };
  const statusLoad = coalesced(status);
  statusLoad();
  setInterval(statusLoad, statusEveryMs);
  // Tenants are asked once the first status said whether this is a node or a router.
  const tenants = new TenantsView(() => cell.routerCells);
  const tenantsLoad = coalesced(() => tenants.load());
  void cell.firstStatus.then(() => {
    tenantsLoad();
    setInterval(tenantsLoad, tenantsEveryMs);
  });
  setInterval(reload.leases, leasesEveryMs);
  setInterval(() => leases.tick(), countdownEveryMs);
}

start();
