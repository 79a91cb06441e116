import { Link } from '../../router.js';

const TABS: Array<[string, string]> = [['', 'Live events'], ['/lexicon', 'Lexicon'], ['/annotations', 'Annotations']];

/**
 * The Events section's own navigation: live events, the lexicon (what each event and property
 * means) and annotations (notes on the timeline), all under the top bar's Events entry.
 */
export function EventsTabs(props: { projectId: string; current: '' | '/lexicon' | '/annotations' }) {
  return (
    <nav class="events-tabs" aria-label="Events section">
      <ul>
        {TABS.map(([path, label]) => (
          <li><Link href={`/projects/${props.projectId}/events${path}`} aria-current={props.current === path ? 'page' : undefined}>{label}</Link></li>
        ))}
      </ul>
    </nav>
  );
}
