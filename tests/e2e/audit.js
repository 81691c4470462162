// The dashboard checked in the page itself (tests/e2e/test_dashboard_screens.py): a list of what is wrong,
// empty when all is well. Called with the page's language ("en" or "zh").
async (lang) => {
    const { I18n } = await import('/static/i18n.js');
    const en = new I18n('en');
    const bad = [];
    const visible = (n) => !!(n.offsetWidth || n.offsetHeight || n.getClientRects().length)
        && getComputedStyle(n).visibility !== 'hidden';
    const label = (n) => `${n.tagName.toLowerCase()}${n.id ? '#' + n.id : ''}.${n.className}: ${n.textContent.trim().slice(0, 40)}`;
    const vw = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > vw + 1) bad.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${vw}`);
    // clipped text: a table cell or a box that hides overflow narrower than its content
    for (const n of document.querySelectorAll('body *')) {
        if (!visible(n) || n.closest('.sr, #chart')) continue;
        const cs = getComputedStyle(n);
        const clips = ['hidden', 'clip'].includes(cs.overflowX) || cs.textOverflow === 'ellipsis' || n.matches('td, th');
        if (clips && n.scrollWidth > n.clientWidth + 1) bad.push(`clipped ${label(n)} (${n.scrollWidth} > ${n.clientWidth})`);
        const r = n.getBoundingClientRect();
        if (r.width && r.right > vw + 1 && !n.closest('.scroll')) bad.push(`past the viewport ${label(n)}`);
    }
    // a table wider than its box has a visible cue (only the spreads may be)
    for (const box of document.querySelectorAll('#keyed .scroll')) {
        if (!visible(box) || box.scrollWidth <= box.clientWidth + 1) continue;
        const cue = box.closest('article').querySelector('.scroll-cue');
        if (!cue || !visible(cue) || !cue.textContent.trim()) bad.push(`sideways scroll without a cue in ${box.parentElement.className}`);
    }
    // names wrap to at most 3 lines
    for (const n of document.querySelectorAll('#keyed td.name .nm, .categories td.name')) {
        if (!visible(n)) continue;
        const lines = Math.round(n.getBoundingClientRect().height / parseFloat(getComputedStyle(n).lineHeight));
        if (lines > 3) bad.push(`name on ${lines} lines: ${label(n)}`);
    }
    // every live price has its unit and its time, the time labelled with its zone
    for (const tr of document.querySelectorAll('#live-body tr[data-id]')) {
        if (!visible(tr)) continue;
        const unit = [...tr.querySelectorAll('td.unit, .sub-unit')].filter(visible).map((n) => n.textContent.trim());
        if (!unit.length || !unit[0]) bad.push(`no unit for ${tr.dataset.id}`);
        const time = [...tr.querySelectorAll('td.time, .sub-time')].filter(visible)[0];
        if (!time) { bad.push(`no time for ${tr.dataset.id}`); continue; }
        const zoned = time.matches('.sub-time') ? time.textContent
            : document.querySelector('.quotes th:last-child').textContent;
        if (!/(UTC[+-]\d|北京)/.test(zoned)) bad.push(`time without zone for ${tr.dataset.id}: ${zoned}`);
    }
    for (const n of document.querySelectorAll('#markets-note, .feed time')) {
        if (visible(n) && /\d\d:\d\d/.test(n.textContent) && !/(UTC[+-]\d|北京时间)/.test(n.textContent))
            bad.push(`time without zone: ${label(n)}`);
    }
    // overlaps: the chart's legend, hint and attribution stay outside the plot; no library logo on it
    const chart = document.querySelector('#chart');
    if (visible(chart)) {
        const c = chart.getBoundingClientRect();
        for (const sel of ['#chart-legend', '.attribution', '[data-testid=trading-day]']) {
            const r = document.querySelector(sel).getBoundingClientRect();
            if (r.bottom > c.top + 1 && r.top < c.bottom - 1) bad.push(`${sel} overlaps the chart`);
        }
        if (chart.querySelector('a[href*="tradingview"]')) bad.push('library logo drawn on the chart');
        if (!document.querySelector('#chart-legend').textContent.trim()) bad.push('empty chart legend');
    }
    // untranslated: a UI string that reads as in English
    if (lang === 'zh') {
        for (const n of document.querySelectorAll('[data-i18n]')) {
            if (!visible(n)) continue;
            const english = en.t(n.dataset.i18n);
            if (n.textContent === english && /[a-z]{2,}/.test(english)) bad.push(`untranslated ${n.dataset.i18n}: ${english}`);
        }
        const mustBeChinese = ['.tag', '.feed-meta .source', '#live-body td.unit', '.categories .price .unit',
            '[data-testid=inventory] td.num:nth-child(3)', '[data-testid=plan]', '[data-testid=conn-status]',
            '#chart-legend b', '#spreads-body .contract', '.cat-name', '#kind-tabs .tab:not([data-kind=fx])'];
        for (const sel of mustBeChinese) {
            for (const n of document.querySelectorAll(sel)) {
                if (visible(n) && !/[\u4e00-\u9fff]/.test(n.textContent) && !/^[A-Z0-9/ .·-]+$/.test(n.textContent))
                    bad.push(`untranslated ${sel}: ${n.textContent}`);
            }
        }
        const axis = (chart.dataset.axisLabels || '').split('|').filter(Boolean);
        if (!axis.length) bad.push('no time-axis labels recorded');
        for (const a of axis) if (!/^(\d+年|\d+月|(\d+月)?\d+日|\d{2}:\d{2})$/.test(a)) bad.push(`axis label not in Chinese: ${a}`);
    }
    return bad;
}
