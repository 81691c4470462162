// The console's Data source section's strings (SPEC 20), in English and Chinese; merged into console-i18n.js's.

export const SOURCE_STRINGS = {
  en: {
    source: "Data source", sourceHint: "Publish your own prices beside ours: declare an instrument here, make a key "
      + "with the scope \u201cingest\u201d above, then POST JSON lines to /api/v1/ingest or send them over "
      + "/ws/ingest (docs/ingest). Only this account's keys see these instruments.",
    sourceNamespace: "Namespace: {ns}", sourceNoNamespace: "No namespace yet: ask us for one in a support ticket.",
    sourceLimits: "{used} of {max} instruments · up to {rate} ticks a second",
    sourceFull: "This account holds its limit of instruments: delete one, or ask us to raise the limit (a support "
      + "ticket).",
    colInstrument: "Instrument", colName: "Name", colVenue: "Venue", colUnit: "Unit", colDecimals: "Decimals",
    srcName: "Name (after the namespace)", srcNameZh: "Name (Chinese)", srcNameEn: "Name (English)",
    srcUnitZh: "Unit (Chinese)", srcUnitEn: "Unit (English)", srcCurrency: "Currency", srcDecimals: "Decimals",
    srcVenue: "Trading days and sessions of", declare: "Declare instrument", deleteInstrument: "Delete",
    deleteInstrumentAsk: "Delete {id}? Its data stops being served and its id is never reused.",
    noInstruments: "No instruments yet.", instrumentDeclared: "{id} declared: publish its ticks with an ingest key.",
    instrumentDeleted: "{id} deleted.", keyScope: "Scope", scopeRead: "read", scopeIngest: "ingest (publish only)",
    err_declare_conflict: "No room for another instrument: the account's limit is reached, or the id was used before.",
    err_declare_forbidden: "This id is outside your namespace, or the account has none yet.",
  },
  zh: {
    source: "专属数据源", sourceHint: "把您自己的价格与我们的放在一起：在此声明品种，在上方创建范围为“ingest”的密钥，"
      + "再以 JSON lines 提交到 /api/v1/ingest 或通过 /ws/ingest 发送（见 docs/ingest）。只有本账户的密钥能看到这些品种。",
    sourceNamespace: "命名空间：{ns}", sourceNoNamespace: "尚无命名空间：请在支持工单中向我们申请。",
    sourceLimits: "已用 {used} / {max} 个品种 · 每秒最多 {rate} 笔",
    sourceFull: "本账户的品种数已达上限：请删除一个，或请我们提高上限（提交工单）。",
    colInstrument: "品种", colName: "名称", colVenue: "交易所", colUnit: "单位", colDecimals: "小数位",
    srcName: "名称（命名空间之后）", srcNameZh: "中文名称", srcNameEn: "英文名称", srcUnitZh: "中文单位",
    srcUnitEn: "英文单位", srcCurrency: "币种", srcDecimals: "小数位", srcVenue: "交易日与时段依照",
    declare: "声明品种", deleteInstrument: "删除",
    deleteInstrumentAsk: "删除 {id}？其数据将不再提供，且该代码不会再被使用。",
    noInstruments: "尚无品种。", instrumentDeclared: "已声明 {id}：请用 ingest 密钥发布其行情。",
    instrumentDeleted: "已删除 {id}。", keyScope: "范围", scopeRead: "读取", scopeIngest: "ingest（仅发布）",
    err_declare_conflict: "无法再声明品种：已达账户上限，或该代码曾被使用。",
    err_declare_forbidden: "该代码不在您的命名空间内，或账户尚无命名空间。",
  },
};
